import { escapeHtml, layout } from '../http/html.ts'

export interface AuthorizedApp {
  clientId: string
  name: string
  /** The permissions' registry descriptions (none when the consent is gone but a grant remains). */
  permissions: string[]
  /** When the user last allowed it; undefined for an app whose removal stopped half-way. */
  grantedAt: number | undefined
}

export interface AppsPageInput {
  csrf: string
  username: string
  apps: AuthorizedApp[]
  /** What the last action did, shown once (after a removal). */
  notice?: string
}

function when (ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 16) + ' UTC'
}

function appItem (csrf: string, app: AuthorizedApp): string {
  const since = app.grantedAt === undefined
    ? '<p class="lead error">Its access was not fully removed: remove it again.</p>'
    : `<p class="lead">Authorized on <time datetime="${new Date(app.grantedAt).toISOString()}">${when(app.grantedAt)}</time></p>`
  const permissions = app.permissions.length === 0 ? '' : `<div class="checks"><ul>${app.permissions.map((permission) => `<li>${escapeHtml(permission)}</li>`).join('')}</ul></div>`
  return `<li class="app" data-client-id="${escapeHtml(app.clientId)}">
<h3>${escapeHtml(app.name)}</h3>
${since}
${permissions}
<form method="post" action="/oauth2/account/apps/remove">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<input type="hidden" name="client_id" value="${escapeHtml(app.clientId)}">
<button type="submit" class="secondary danger">Remove access</button>
</form></li>`
}

/** The signed-in user's authorized apps, each with what it may do and a "Remove access" button. */
export function appsPage ({ csrf, username, apps, notice }: AppsPageInput): string {
  const list = apps.length === 0
    ? '<p id="no-apps">You have not authorized any app.</p>'
    : `<ul class="apps">${apps.map((app) => appItem(csrf, app)).join('')}</ul>`
  return layout('Your authorized apps', `<h1>Your authorized apps</h1>
<p class="lead">Signed in as <strong>${escapeHtml(username)}</strong>. Removing an app's access signs it out everywhere at once; it has to ask you again.</p>
${notice === undefined ? '' : `<p id="notice" role="status">${escapeHtml(notice)}</p>`}
${list}`)
}
