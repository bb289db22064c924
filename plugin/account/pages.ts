// The account host's own pages: sign-in, consent, signed in. Plain forms with stable field names
// (`username`, `password`, `decision`), in the one layout of http/html.ts.
import { escapeHtml, layout } from '../http/html.ts'

function hidden (name: string, value: string): string {
  return `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`
}

export interface SignInPageInput {
  csrf: string
  returnTo: string
  /** The registered app the sign-in continues to, when there is one: a person signs in for it. */
  appName?: string
  error?: string
  username?: string
}

export function signInPage ({ csrf, returnTo, appName, error, username = '' }: SignInPageInput): string {
  const heading = appName === undefined ? 'Sign in' : `Sign in to continue to <span id="app-name">${escapeHtml(appName)}</span>`
  return layout('Sign in', `<h1>${heading}</h1><p class="lead">Use your macgate account.</p>
${error === undefined ? '' : `<p class="error" role="alert">${escapeHtml(error)}</p>`}
<form method="post" action="/oauth2/signin">${hidden('_csrf', csrf)}${hidden('return_to', returnTo)}
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required value="${escapeHtml(username)}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button type="submit">Sign in</button></div></form>`)
}

export interface ConfirmPageInput {
  csrf: string
  username: string
  appName: string
  /**
   * The app registered itself (RFC 7591): its name is the developer's word, not the operator's, so
   * the page says so, lest a registration pass itself off as another app.
   */
  unverified?: boolean
  permissions: string[]
  /** The authorization request's own URL, where the decision is posted. */
  action: string
}

export function confirmPage ({ csrf, username, appName, unverified = false, permissions, action }: ConfirmPageInput): string {
  const items = permissions.map((permission) => `<li>${escapeHtml(permission)}</li>`).join('')
  const warning = unverified
    ? `<p class="lead" id="unverified"><strong>Unverified app.</strong> Its developer registered it and chose the name "${escapeHtml(appName)}"; the operator of this site has not checked who they are. Allow it only if you expected it.</p>\n`
    : ''
  // Allow is the primary action; Deny is as easy to reach, but not the one that stands out.
  return layout('Authorize', `<h1>Authorize ${escapeHtml(appName)}${unverified ? ' <small>(unverified)</small>' : ''}</h1>
<p class="lead"><strong>${escapeHtml(appName)}</strong> asks for these permissions:</p>${warning}<div class="checks"><ul id="permissions">${items}</ul></div>
<form method="post" action="${escapeHtml(action)}">${hidden('_csrf', csrf)}<div class="actions">
<button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny" class="secondary">Deny</button></div></form>
<div class="aside">Signed in as <strong id="account">${escapeHtml(username)}</strong>.
<form method="post" action="/oauth2/signout">${hidden('_csrf', csrf)}${hidden('return_to', action)}
<button type="submit" class="link">Use another account</button></form>
· <a id="your-apps" href="/oauth2/account/apps">Apps you have authorized</a></div>`)
}

export function signedInPage (username: string): string {
  return layout('Signed in', `<h1>Signed in</h1><p class="lead">Signed in as <strong>${escapeHtml(username)}</strong>. You can close this page.</p>
<p><a href="/oauth2/account/apps">Apps you have authorized</a></p>`)
}
