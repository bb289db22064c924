// The developer console's pages (`/oauth2/developer`): a developer's own apps, the form to register
// or edit one, the secret shown once, and the confirmation before a deletion. Plain forms with
// stable field names, in the one layout of http/html.ts; every form carries the CSRF token.
import { escapeHtml, layout } from '../http/html.ts'

export const CONSOLE_PAGE = '/oauth2/developer'

/** One app as its owner sees it. */
export interface DeveloperApp {
  id: string
  name: string
  isPublic: boolean
  redirectUris: string[]
  allowedOrigins: string[]
  scopes: string[]
  grantTypes: string[]
  /** Its own limit a minute, when it has one (else each route's default). */
  quotaPerMinute?: number
  /** Each limited route's limit and this minute's use. */
  quotas: Array<{ route: string, perMinute: number, used: number }>
  /** Users who have authorized it. */
  users: number
  createdAt: number
}

/** What the register and edit forms offer: the deployment's bounds. */
export interface FormChoices {
  scopes: Array<{ id: string, description: string }>
  grantTypes: string[]
}

/** The form's values, as last submitted (or the app's). */
export interface AppForm {
  name: string
  isPublic: boolean
  redirectUris: string
  allowedOrigins: string
  scopes: string[]
  grantTypes: string[]
}

function hidden (name: string, value: string): string {
  return `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`
}

function signedInAs (username: string): string {
  return `<p class="lead">Signed in as <strong id="account">${escapeHtml(username)}</strong>.</p>`
}

function list (items: string[], empty: string): string {
  return items.length === 0 ? `<em>${escapeHtml(empty)}</em>` : items.map((item) => `<code>${escapeHtml(item)}</code>`).join(' ')
}

const GRANT_LABELS: Record<string, string> = {
  authorization_code: 'Authorization code (with refresh tokens)',
  implicit: 'Implicit (token in the redirect)',
  'urn:ietf:params:oauth:grant-type:device_code': 'Device (TVs, consoles, command lines)'
}

function appDetails (app: DeveloperApp): string {
  const quota = app.quotas.length === 0
    ? `<em>${app.quotaPerMinute === undefined ? 'no route with a quota' : `${app.quotaPerMinute} a minute on every limited route`}</em>`
    : app.quotas.map(({ route, perMinute, used }) => `<code>${escapeHtml(route)}</code> <span class="quota-use">${used} of ${perMinute}</span> this minute`).join('<br>')
  return `<dl class="details">
<dt>Client id</dt><dd><code class="client-id">${escapeHtml(app.id)}</code></dd>
<dt>Type</dt><dd class="type">${app.isPublic ? 'public (no secret, PKCE)' : 'confidential (has a secret)'}</dd>
<dt>Redirect URIs</dt><dd class="redirect-uris">${list(app.redirectUris, 'none')}</dd>
<dt>Allowed origins</dt><dd class="allowed-origins">${list(app.allowedOrigins, 'none besides the redirect URIs\'')}</dd>
<dt>Scopes</dt><dd class="scopes">${list(app.scopes, 'none')}</dd>
<dt>Grant types</dt><dd class="grant-types">${list(app.grantTypes, 'none')}</dd>
<dt>Quota</dt><dd class="quota">${quota}</dd>
<dt>Users</dt><dd class="users">${app.users} ${app.users === 1 ? 'user has' : 'users have'} authorized it</dd>
</dl>`
}

export interface ConsolePageInput {
  username: string
  apps: DeveloperApp[]
  limit: number
  notice?: string
}

/** "My apps": every app the user owns, each with what it is and how it is used. */
export function consolePage ({ username, apps, limit, notice }: ConsolePageInput): string {
  const items = apps.map((app) => `<li class="app" data-client-id="${escapeHtml(app.id)}"><h3><a href="${CONSOLE_PAGE}/apps/${escapeHtml(app.id)}">${escapeHtml(app.name)}</a></h3>${appDetails(app)}</li>`).join('')
  const register = apps.length >= limit
    ? `<p id="at-limit">You own ${apps.length} apps, the most allowed here (${limit}): delete one to register another.</p>`
    : `<p><a class="button" id="register" href="${CONSOLE_PAGE}/new">Register an app</a></p>`
  return layout('Your apps', `<h1>Your apps</h1>${signedInAs(username)}
${notice === undefined ? '' : `<p id="notice" role="status">${escapeHtml(notice)}</p>`}
${register}
${apps.length === 0 ? '<p id="no-apps">You have not registered any app.</p>' : `<ul class="apps">${items}</ul>`}`, { wide: true })
}

function checkbox (name: string, value: string, label: string, checked: boolean): string {
  return `<label class="check"><input type="checkbox" name="${name}" value="${escapeHtml(value)}"${checked ? ' checked' : ''}> ${escapeHtml(label)}</label>`
}

function appFields (form: AppForm, choices: FormChoices, editing: boolean): string {
  const type = editing
    ? `<p>Type: <strong>${form.isPublic ? 'public' : 'confidential'}</strong> (fixed once registered)</p>`
    : `<fieldset><legend>Type</legend>
<label class="check"><input type="radio" name="type" value="confidential"${form.isPublic ? '' : ' checked'}> Confidential: a server that keeps a secret</label>
<label class="check"><input type="radio" name="type" value="public"${form.isPublic ? ' checked' : ''}> Public: an app in a browser or on a device (no secret, PKCE)</label></fieldset>`
  return `<label for="name">Name</label><input id="name" name="name" maxlength="100" required value="${escapeHtml(form.name)}">
${type}
<label for="redirect_uris">Redirect URIs (one a line)</label><textarea id="redirect_uris" name="redirect_uris" rows="3" required>${escapeHtml(form.redirectUris)}</textarea>
<label for="allowed_origins">Allowed origins (one a line; optional)</label><textarea id="allowed_origins" name="allowed_origins" rows="2">${escapeHtml(form.allowedOrigins)}</textarea>
<fieldset><legend>Scopes</legend>${choices.scopes.map(({ id, description }) => checkbox('scope', id, `${id}: ${description}`, form.scopes.includes(id))).join('')}</fieldset>
<fieldset><legend>Grant types</legend>${choices.grantTypes.map((type) => checkbox('grant_types', type, GRANT_LABELS[type] ?? type, form.grantTypes.includes(type))).join('')}</fieldset>`
}

function errorLine (error: string | undefined): string {
  return error === undefined ? '' : `<p class="error" role="alert" id="error">${escapeHtml(error)}</p>`
}

export interface RegisterPageInput {
  csrf: string
  form: AppForm
  choices: FormChoices
  error?: string
}

export function registerPage ({ csrf, form, choices, error }: RegisterPageInput): string {
  return layout('Register an app', `<h1>Register an app</h1>${errorLine(error)}
<form method="post" action="${CONSOLE_PAGE}/apps">${hidden('_csrf', csrf)}
${appFields(form, choices, false)}
<div class="actions"><button type="submit">Register</button><a class="button secondary" href="${CONSOLE_PAGE}">Cancel</a></div></form>`, { wide: true })
}

export interface AppPageInput {
  csrf: string
  app: DeveloperApp
  form: AppForm
  choices: FormChoices
  /** The secret just made (registration or rotation): shown this once. */
  secret?: string
  error?: string
  notice?: string
}

const GRACE_CHOICES: Array<[number, string]> = [[0, 'stops at once'], [3600, 'keeps working for an hour'], [86_400, 'keeps working for a day'], [604_800, 'keeps working for a week']]

/** One app: its details, the secret when just made, the edit form, the rotation and the way to delete it. */
export function appPage ({ csrf, app, form, choices, secret, error, notice }: AppPageInput): string {
  const shown = secret === undefined
    ? ''
    : `<div class="step" id="secret-once"><h2>Client secret</h2><p><code id="client-secret">${escapeHtml(secret)}</code></p>
<p class="error">Copy it now: it is shown only this once, and kept only hashed.</p></div>`
  const rotate = app.isPublic
    ? ''
    : `<h2>Rotate the secret</h2><form method="post" action="${CONSOLE_PAGE}/apps/${escapeHtml(app.id)}/rotate">${hidden('_csrf', csrf)}
<label for="grace">The current secret then</label><select id="grace" name="grace">${GRACE_CHOICES.map(([seconds, label]) => `<option value="${seconds}"${seconds === 86_400 ? ' selected' : ''}>${label}</option>`).join('')}</select>
<div class="actions"><button type="submit" class="secondary" id="rotate">Rotate the secret</button></div></form>`
  return layout(app.name, `<p><a href="${CONSOLE_PAGE}">← Your apps</a></p><h1 id="app-name">${escapeHtml(app.name)}</h1>
${notice === undefined ? '' : `<p id="notice" role="status">${escapeHtml(notice)}</p>`}${shown}
${appDetails(app)}
<h2>Edit</h2>${errorLine(error)}
<form method="post" action="${CONSOLE_PAGE}/apps/${escapeHtml(app.id)}">${hidden('_csrf', csrf)}
${appFields(form, choices, true)}
<div class="actions"><button type="submit" id="save">Save</button></div></form>
${rotate}
<h2>Delete</h2><p><a class="button secondary danger" id="delete" href="${CONSOLE_PAGE}/apps/${escapeHtml(app.id)}/delete">Delete this app…</a></p>`, { wide: true })
}

/** Before a deletion: what it does, and to how many users. */
export function deletePage (csrf: string, app: DeveloperApp): string {
  return layout(`Delete ${app.name}`, `<h1>Delete ${escapeHtml(app.name)}?</h1>
<p class="lead" id="consequence">Deleting it signs <strong id="signed-out">${app.users} ${app.users === 1 ? 'user' : 'users'}</strong> out of it at once: every token it holds is revoked, and its client id stops working. This cannot be undone.</p>
<form method="post" action="${CONSOLE_PAGE}/apps/${escapeHtml(app.id)}/delete">${hidden('_csrf', csrf)}
<div class="actions"><button type="submit" class="danger" id="confirm-delete">Delete it</button><a class="button secondary" href="${CONSOLE_PAGE}/apps/${escapeHtml(app.id)}">Keep it</a></div></form>`)
}

/** A signed-in user the deployment does not let develop. */
export function notAllowedPage (username: string): string {
  return layout('Developer console', `<h1>Developer console</h1>${signedInAs(username)}
<p class="error" id="not-allowed">This account may not register apps here. Ask the operator to make it a developer.</p>`)
}

/** Another user's app, or none: the same answer. */
export function noSuchAppPage (): string {
  return layout('No such app', `<h1>No such app</h1><p class="lead" id="no-such-app">You have no app with this id.</p><p><a href="${CONSOLE_PAGE}">Your apps</a></p>`)
}
