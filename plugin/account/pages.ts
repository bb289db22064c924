// The account host's own pages: sign-in, consent, signed in. Plain forms with stable field names
// (`username`, `password`, `decision`), in the one layout of core/html.ts.
import { escapeHtml, layout } from '../core/html.js'

function hidden (name: string, value: string): string {
  return `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`
}

export function signInPage ({ csrf, returnTo, error, username = '' }: { csrf: string, returnTo: string, error?: string, username?: string }): string {
  return layout('Sign in', `<h1>Sign in</h1>
${error === undefined ? '' : `<p class="error" role="alert">${escapeHtml(error)}</p>`}
<form method="post" action="/oauth2/signin">${hidden('_csrf', csrf)}${hidden('return_to', returnTo)}
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required value="${escapeHtml(username)}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form>`)
}

export interface ConfirmPageInput {
  csrf: string
  username: string
  appName: string
  permissions: string[]
  /** The authorization request's own URL, where the decision is posted. */
  action: string
}

export function confirmPage ({ csrf, username, appName, permissions, action }: ConfirmPageInput): string {
  const items = permissions.map((permission) => `<li>${escapeHtml(permission)}</li>`).join('')
  return layout('Authorize', `<h1>Authorize ${escapeHtml(appName)}</h1>
<p>Signed in as <strong id="account">${escapeHtml(username)}</strong></p>
<p><strong>${escapeHtml(appName)}</strong> asks for these permissions:</p><ul id="permissions">${items}</ul>
<form method="post" action="${escapeHtml(action)}">${hidden('_csrf', csrf)}
<button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny">Deny</button></form>
<form method="post" action="/oauth2/signout">${hidden('_csrf', csrf)}${hidden('return_to', action)}
<button type="submit" class="link">Use another account</button></form>`)
}

export function signedInPage (username: string): string {
  return layout('Signed in', `<h1>Signed in</h1><p>Signed in as <strong>${escapeHtml(username)}</strong>. You can close this page.</p>`)
}
