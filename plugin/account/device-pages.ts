// The verification page's steps (RFC 8628 §3.3): enter the code, confirm the device's access, done.
// Plain forms with stable field names (`user_code`, `decision`), in the one layout of http/html.ts.
import { escapeHtml, layout } from '../http/html.ts'

/** Where every step posts: the page itself. */
const ACTION = '/oauth2/device'

function hidden (name: string, value: string): string {
  return `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`
}

function signedInAs (csrf: string, username: string): string {
  return `<div class="aside">Signed in as <strong id="account">${escapeHtml(username)}</strong>.
<form method="post" action="/oauth2/signout">${hidden('_csrf', csrf)}${hidden('return_to', ACTION)}
<button type="submit" class="link">Use another account</button></form></div>`
}

export interface CodeEntryPageInput {
  csrf: string
  username: string
  /** Prefilled from verification_uri_complete (`XXXX-XXXX`); still to be confirmed. */
  userCode: string
  error?: string
}

export function codeEntryPage ({ csrf, username, userCode, error }: CodeEntryPageInput): string {
  return layout('Connect a device', `<h1>Connect a device</h1>
<p class="lead">Enter the code your TV, console or other device shows.</p>
${error === undefined ? '' : `<p class="error" role="alert">${escapeHtml(error)}</p>`}
<form method="post" action="${ACTION}">${hidden('_csrf', csrf)}
<label for="user_code">Code</label><input id="user_code" name="user_code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false"
 placeholder="XXXX-XXXX" maxlength="20" required value="${escapeHtml(userCode)}">
<div class="actions"><button type="submit">Continue</button></div></form>
${signedInAs(csrf, username)}`)
}

export interface DeviceConfirmPageInput {
  csrf: string
  username: string
  appName: string
  permissions: string[]
  /** As shown on the device: `XXXX-XXXX`. */
  userCode: string
}

/**
 * The consent page's words for the app and its permissions, and RFC 8628 §5.4's warning: a code
 * someone sent you (by mail, by chat) would give their device your account.
 */
export function deviceConfirmPage ({ csrf, username, appName, permissions, userCode }: DeviceConfirmPageInput): string {
  const items = permissions.map((permission) => `<li>${escapeHtml(permission)}</li>`).join('')
  return layout('Connect a device', `<h1>Authorize ${escapeHtml(appName)}</h1>
<p class="lead">A device showing the code <strong id="user-code">${escapeHtml(userCode)}</strong> asks to use <strong>${escapeHtml(appName)}</strong> with these permissions:</p>
<div class="checks"><ul id="permissions">${items}</ul></div>
<p class="error" id="warning" role="alert">Only allow this if the code is shown on a device you are using right now. If someone sent you this code or this link, deny: allowing would let their device into your account.</p>
<form method="post" action="${ACTION}">${hidden('_csrf', csrf)}${hidden('user_code', userCode)}<div class="actions">
<button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny" class="secondary">Deny</button></div></form>
${signedInAs(csrf, username)}`)
}

export function deviceDonePage (appName: string, allowed: boolean): string {
  return allowed
    ? layout('Device connected', `<h1 id="outcome">Device connected</h1><p class="lead"><strong>${escapeHtml(appName)}</strong> can now use your account on that device. Return to it; you can close this page.</p>
<p><a href="/oauth2/account/apps">Apps you have authorized</a></p>`)
    : layout('Access denied', '<h1 id="outcome">Access denied</h1><p class="lead">The device was not given access to your account. You can close this page.</p>')
}
