// Server-rendered pages of the account host. No scripts: plain forms with stable field names
// (`username`, `password`, `decision`), so that scripts and browsers can drive them alike.

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

export function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (character) => ENTITIES[character] ?? character)
}

const STYLE = `body{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0;display:flex;justify-content:center}
main{background:#fff;margin:4rem 1rem;padding:2rem;border-radius:8px;max-width:24rem;width:100%;box-shadow:0 1px 4px #0002}
label{display:block;margin:.75rem 0 .25rem}input{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem}
button{margin:1rem .5rem 0 0;padding:.5rem 1rem;font-size:1rem;cursor:pointer}.error{color:#b00020}
ul{padding-left:1.2rem}.link{background:none;border:none;color:#0645ad;padding:0;text-decoration:underline}`

function layout (title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`
}

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

export function errorPage (errno: number, description: string): string {
  return layout('Authorization error', `<h1>Authorization error</h1>
<p class="error">Error <span id="error-code">${errno}</span>: <span id="error-description">${escapeHtml(description)}</span></p>
<p>The application sent an invalid request. Return to it and try again.</p>`)
}

export function signedInPage (username: string): string {
  return layout('Signed in', `<h1>Signed in</h1><p>Signed in as <strong>${escapeHtml(username)}</strong>. You can close this page.</p>`)
}
