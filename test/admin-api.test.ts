// The admin API (gateway/admin-api.ts) on the admin listener, built with a test gateway's store,
// registry and audit trail: every endpoint's success and refusals, strict bodies, the bearer token,
// a store outage, the audit events, and that removing a user through the API does exactly what
// `macgate users remove` does.
import type { FastifyInstance, InjectOptions } from 'fastify'
import t, { type Test } from 'tap'
import { buildAdminServer } from '../gateway/index.ts'
import pino from 'pino'
import { AuditEvents, MemoryStore, registerClient, ScopeRegistry, type AuditEvent, type NewClient } from '../plugin/index.ts'
import { addClient, addUser, authorizeUrl, buildTestApp, callToken, InjectBrowser, obtainCode, REDIRECT_URI } from './helpers/app.ts'
import { signedInject } from './helpers/gateway.ts'
import { eventually } from './helpers/live.ts'
import { cliEnv } from './helpers/cli.ts'
import { runInProcess } from './helpers/in-process.ts'
import { memoryLog } from './helpers/memory-log.ts'
import { startRedis } from './helpers/redis.ts'
import { grantTokens, type Tokens } from './helpers/grants.ts'

const REVOKED = { result: 'error', description: 'access token invalid or expired', code: 96008 }
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

async function adminFor (t: Test, app: FastifyInstance, token?: string): Promise<FastifyInstance> {
  const admin = await buildAdminServer({
    metrics: async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', text: '' }),
    store: app.macgate.store,
    api: { registry: app.macgate.registry, events: app.macgate.events },
    ...(token !== undefined && { token })
  })
  t.teardown(async () => await admin.close())
  return admin
}

interface Answer { status: number, body: any, headers: Record<string, unknown> }

/** A JSON request to the admin server (`body` as JSON unless a string, sent as it is). */
async function call (admin: FastifyInstance, method: InjectOptions['method'], url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await admin.inject({
    method,
    url,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
    ...(body !== undefined && { payload: typeof body === 'string' ? body : JSON.stringify(body) })
  })
  let parsed: unknown
  try {
    parsed = response.body === '' ? undefined : JSON.parse(response.body)
  } catch {
    parsed = response.body
  }
  return { status: response.statusCode, body: parsed, headers: response.headers }
}

function assertBadRequest (t: Test, answer: Answer, label: string, message?: RegExp): void {
  t.equal(answer.status, 400, `${label}: 400 (got ${answer.status} ${JSON.stringify(answer.body)})`)
  t.equal(answer.body?.error, 'invalid_request', `${label}: invalid_request`)
  t.type(answer.body?.message, 'string', `${label}: a message`)
  if (message !== undefined) t.match(answer.body?.message, message, `${label}: the message says why`)
}

function assertNotFound (t: Test, answer: Answer, label: string): void {
  t.equal(answer.status, 404, `${label}: 404 (got ${answer.status} ${JSON.stringify(answer.body)})`)
  t.equal(answer.body?.error, 'not_found', `${label}: not_found`)
}

function recorder (app: FastifyInstance): AuditEvent[] {
  const events: AuditEvent[] = []
  app.macgate.events.on('audit', (event) => { events.push(event) })
  return events
}

async function profile (app: FastifyInstance, tokens: Tokens) {
  const response = await signedInject(app, { url: '/user/profile', token: tokens.access_token, macKey: tokens.mac_key })
  return { status: response.statusCode, body: JSON.parse(response.body) as unknown }
}

async function refresh (app: FastifyInstance, client: { clientId: string, clientSecret: string }, tokens: Tokens) {
  return await callToken(app, { client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'refresh_token', refresh_token: tokens.refresh_token })
}

/** What `cookie` gets at the authorize endpoint: 200 (signed in) or 302 (to sign-in). */
async function sessionStatus (app: FastifyInstance, cookie: string, clientId: string): Promise<number> {
  return (await app.inject({ url: authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1' }), headers: { cookie } })).statusCode
}

t.test('clients: list, register, rotate the secret, remove; and their refusals', async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await adminFor(t, app)
  const events = recorder(app)

  const before = await call(admin, 'GET', '/admin/clients')
  t.equal(before.status, 200)
  t.ok(Array.isArray(before.body), 'a JSON array')
  const count = before.body.length

  const created = await call(admin, 'POST', '/admin/clients', { name: 'Photo Printer', redirect_uris: [REDIRECT_URI], scope: '1 3' })
  t.equal(created.status, 201, 'registered: 201')
  t.match(created.body, {
    client_id: /^\d+$/,
    name: 'Photo Printer',
    redirect_uris: [REDIRECT_URI],
    scope: '1 3',
    response_types: ['code', 'token'],
    require_pkce: false,
    resource_server: false,
    mac_algorithm: 'HmacSha1',
    created_at: ISO,
    client_secret: /^[A-Za-z0-9_-]{40,}$/
  })
  const client = { clientId: created.body.client_id as string, clientSecret: created.body.client_secret as string }
  t.notOk(JSON.stringify(created.body).includes('secretHash') || JSON.stringify(created.body).includes('secret_hash'), 'no hash in the answer')
  t.match(events.at(-1), { type: 'client.registered', clientId: client.clientId, name: 'Photo Printer' }, 'client.registered recorded')

  // The registered client is real: its secret exchanges a code.
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  const exchanged = await callToken(app, { client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code })
  t.equal(exchanged.status, 200, 'the returned secret works at the token endpoint')
  const tokens = exchanged.body as unknown as Tokens

  const strict = await call(admin, 'POST', '/admin/clients', { name: 'Strict', redirect_uris: [REDIRECT_URI], require_pkce: true, resource_server: true, mac_algorithm: 'HmacSha256' })
  t.equal(strict.status, 201)
  t.match(strict.body, { response_types: ['code'], require_pkce: true, resource_server: true, mac_algorithm: 'HmacSha256', scope: '1 3' }, 'PKCE: code only; the default scope')

  const listed = await call(admin, 'GET', '/admin/clients')
  t.equal(listed.status, 200)
  t.equal(listed.body.length, count + 2)
  const mine = listed.body.find((one: { client_id: string }) => one.client_id === client.clientId)
  t.match(mine, { name: 'Photo Printer', scope: '1 3', redirect_uris: [REDIRECT_URI] }, 'listed')
  t.notOk(JSON.stringify(listed.body).match(/secret/i), 'no secret or hash in the list')

  // Refusals: each a 400 naming what is wrong, and nothing registered.
  const eventsBefore = events.length
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { redirect_uris: [REDIRECT_URI] }), 'no name', /name/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X' }), 'no redirect_uris', /redirect_uris/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [] }), 'empty redirect_uris')
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: ['javascript:alert(1)'] }), 'a bad redirect URI', /javascript:alert\(1\)/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], scope: '1 999' }), 'an unknown scope', /999/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: ['https://[::1/cb'] }), 'a redirect URI no URL parser reads', /must be an absolute http\(s\) URI/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: '   ', redirect_uris: [REDIRECT_URI] }), 'a blank name', /name/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], secret: 'mine' }), 'an unknown field (refused, not dropped)', /secret|additional/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], require_pkce: 'true' }), 'a string for a boolean (no coercion)')
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: REDIRECT_URI }), 'a string for the array')
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], response_types: ['token'], require_pkce: true }), 'PKCE with the implicit grant', /PKCE/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], mac_algorithm: 'md5' }), 'an unknown MAC algorithm')
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', '{"name": "X", '), 'malformed JSON')
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'N'.repeat(101), redirect_uris: [REDIRECT_URI] }), 'a name over 100 characters', /name must be 1 to 100 characters/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], scope: '   ' }), 'a scope of blanks', /at least one scope is required/)
  t.equal((await call(admin, 'GET', '/admin/clients')).body.length, count + 2, 'none of the refused registrations was made')
  t.equal(events.length, eventsBefore, 'and none recorded')

  // Rotation: without grace, the old secret stops at once.
  const refreshed = await refresh(app, client, tokens)
  t.equal(refreshed.status, 200, 'the first secret refreshes')
  let current = refreshed.body as unknown as Tokens
  const rotated = await call(admin, 'POST', `/admin/clients/${client.clientId}/secret`, { grace_seconds: 0 })
  t.equal(rotated.status, 200, 'rotated')
  t.match(rotated.body, { client_id: client.clientId, client_secret: /^[A-Za-z0-9_-]{40,}$/, previous_secret_until: ISO })
  t.not(rotated.body.client_secret, client.clientSecret)
  t.ok(Math.abs(Date.parse(rotated.body.previous_secret_until) - Date.now()) < 5000, 'grace 0: the old secret ends now')
  t.match(events.at(-1), { type: 'client.secret_rotated', clientId: client.clientId, graceSeconds: 0 })
  const oldSecret = await refresh(app, client, current)
  t.not(oldSecret.status, 200, `the old secret is refused (${oldSecret.status})`)
  const withNew = await refresh(app, { clientId: client.clientId, clientSecret: rotated.body.client_secret }, current)
  t.equal(withNew.status, 200, 'the new secret works')
  current = withNew.body as unknown as Tokens

  const graced = await call(admin, 'POST', `/admin/clients/${client.clientId}/secret`, { grace_seconds: 3600 })
  t.equal(graced.status, 200)
  t.ok(Math.abs(Date.parse(graced.body.previous_secret_until) - (Date.now() + 3600_000)) < 5000, 'previous_secret_until is an hour on')
  const duringGrace = await refresh(app, { clientId: client.clientId, clientSecret: rotated.body.client_secret }, current)
  t.equal(duringGrace.status, 200, 'the previous secret works during its grace')
  current = duringGrace.body as unknown as Tokens
  t.match((await call(admin, 'GET', '/admin/clients')).body.find((one: { client_id: string }) => one.client_id === client.clientId), { previous_secret_until: ISO }, 'the list shows the grace')

  const noBody = await call(admin, 'POST', `/admin/clients/${client.clientId}/secret`)
  t.equal(noBody.status, 200, `no body: the default grace (got ${noBody.status} ${JSON.stringify(noBody.body)})`)
  if (noBody.status === 200) t.ok(Math.abs(Date.parse(noBody.body.previous_secret_until) - (Date.now() + 86_400_000)) < 5000, 'a day')
  const emptyObject = await call(admin, 'POST', `/admin/clients/${client.clientId}/secret`, {})
  t.equal(emptyObject.status, 200, '{}: the default grace')
  const latestSecret = emptyObject.body.client_secret as string

  assertNotFound(t, await call(admin, 'POST', '/admin/clients/123456789/secret', { grace_seconds: 0 }), 'rotating an unknown client')
  for (const [label, body] of [['negative grace', { grace_seconds: -1 }], ['fractional grace', { grace_seconds: 1.5 }], ['string grace', { grace_seconds: '60' }], ['unknown field', { grace: 60 }]] as const) {
    assertBadRequest(t, await call(admin, 'POST', `/admin/clients/${client.clientId}/secret`, body), `rotation, ${label}`)
  }
  const afterRefused = await refresh(app, { clientId: client.clientId, clientSecret: latestSecret }, current)
  t.equal(afterRefused.status, 200, 'the refused rotations changed nothing: the latest secret still works')
  current = afterRefused.body as unknown as Tokens

  // Removal: its tokens are refused, then 404.
  t.equal((await profile(app, current)).status, 200, 'the client\'s token works before removal')
  const removed = await call(admin, 'DELETE', `/admin/clients/${client.clientId}`)
  t.equal(removed.status, 204, 'removed: 204')
  t.equal(removed.body, undefined, 'no body')
  t.match(events.at(-1), { type: 'client.removed', clientId: client.clientId })
  t.same(await profile(app, current), { status: 401, body: REVOKED }, 'its access token is refused (96008)')
  t.equal((await refresh(app, { clientId: client.clientId, clientSecret: latestSecret }, current)).status === 200, false, 'no refresh for a removed client')
  assertNotFound(t, await call(admin, 'DELETE', `/admin/clients/${client.clientId}`), 'removing it again')
  assertNotFound(t, await call(admin, 'DELETE', '/admin/clients/not-a-client'), 'removing a malformed id')
  t.notOk((await call(admin, 'GET', '/admin/clients')).body.some((one: { client_id: string }) => one.client_id === client.clientId), 'no longer listed')
})

t.test('registerClient, the one implementation behind the API and the CLI: what only the plugin\'s callers can send', async (t) => {
  const { app, store } = await buildTestApp(t)
  const register = async (input: Partial<NewClient>) => await registerClient(store, app.macgate.registry, { name: 'X', redirectUris: [REDIRECT_URI], ...input })
  const cases: Array<[Partial<NewClient>, RegExp]> = [
    [{ responseTypes: [] }, /^response types must be code, token or both$/],
    [{ responseTypes: ['code', 'id_token' as 'code'] }, /^response types must be code, token or both$/],
    [{ redirectUris: [] }, /^at least one redirect URI is required$/],
    [{ accessTokenTtl: 0 }, /^token lifetimes must be whole seconds$/],
    [{ refreshTokenTtl: 1.5 }, /^token lifetimes must be whole seconds$/]
  ]
  for (const [input, message] of cases) await t.rejects(register(input), { name: 'RegistrationError', message }, JSON.stringify(input))
  const pkce = await register({ requirePkce: true })
  t.same(pkce.client.responseTypes, ['code'], 'requiring PKCE without response types: the code grant only')
  const both = await register({ responseTypes: ['token', 'code', 'token'], accessTokenTtl: 60, refreshTokenTtl: 120 })
  t.same(both.client.responseTypes, ['token', 'code'], 'repeated response types kept once')
  t.equal((await store.listClients()).length, 2, 'only the two accepted clients stored')
})

t.test('users: create, change the password, list and revoke grants, remove; and their refusals', async (t) => {
  const { app, store } = await buildTestApp(t)
  const admin = await adminFor(t, app)
  const events = recorder(app)
  const printer = await addClient(store, { name: 'Photo Printer', scope: '1 3' })
  const calendar = await addClient(store, { name: 'Calendar Sync', scope: '1 4' })

  const created = await call(admin, 'POST', '/admin/users', { username: 'carol', password: 'correct horse battery' })
  t.equal(created.status, 201)
  t.match(created.body, { user_id: /^[0-9a-f-]{36}$/, username: 'carol' })
  t.same(Object.keys(created.body).sort(), ['user_id', 'username'], 'nothing else (no hash)')
  const userId = created.body.user_id as string
  t.match(events.at(-1), { type: 'user.created', userId, username: 'carol' })
  t.match((await store.getUserByName('carol'))?.passwordHash, /^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/, 'stored as scrypt at the default cost (N=2^15, r=8, p=1), salted')

  const eventsBefore = events.length
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 'carol', password: 'another long one' }), 'a taken username', /taken/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 'a b', password: 'correct horse battery' }), 'a bad username', /username/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 'dave', password: 'short' }), 'a short password', /password/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 'dave' }), 'no password', /password/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 'dave', password: 'correct horse battery', admin: true }), 'an unknown field', /admin|additional/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 42, password: 'correct horse battery' }), 'a number for the username')
  t.equal(await store.getUserByName('dave'), undefined, 'no dave was made')
  t.equal(events.length, eventsBefore, 'no event for a refusal')

  const browser = new InjectBrowser(app)
  t.equal((await browser.signIn('carol', 'correct horse battery')).statusCode, 200, 'the created user signs in')
  const printerTokens = await grantTokens(t, app, browser, printer, '1 3')
  const calendarTokens = await grantTokens(t, app, browser, calendar, '1 4')

  const grants = await call(admin, 'GET', '/admin/users/carol/grants')
  t.equal(grants.status, 200)
  t.equal(grants.body.length, 2, 'two grants')
  t.same(grants.body.map((grant: { client_id: string }) => grant.client_id).sort(), [printer.clientId, calendar.clientId].sort())
  for (const grant of grants.body) {
    t.match(grant, { grant_id: /\S/, client_id: /^\d+$/, until: ISO })
    t.ok(Date.parse(grant.until) > Date.now(), 'until is ahead')
  }
  assertNotFound(t, await call(admin, 'GET', '/admin/users/nobody/grants'), 'the grants of an unknown user')

  // Revoke one grant: that app's tokens stop, the other's work.
  const printerGrant = grants.body.find((grant: { client_id: string }) => grant.client_id === printer.clientId).grant_id as string
  const revoked = await call(admin, 'DELETE', `/admin/users/carol/grants/${encodeURIComponent(printerGrant)}`)
  t.equal(revoked.status, 204, 'grant revoked: 204')
  t.match(events.at(-1), { type: 'grant.revoked', grantId: printerGrant, clientId: printer.clientId, by: 'operator' })
  t.same(await profile(app, printerTokens), { status: 401, body: REVOKED }, 'its token is refused')
  const refreshRevoked = await refresh(app, printer, printerTokens)
  t.equal(refreshRevoked.status, 400, 'its refresh token is refused')
  t.equal(refreshRevoked.body.error, 96009)
  t.equal((await profile(app, calendarTokens)).status, 200, 'the other app\'s token works')
  t.same((await call(admin, 'GET', '/admin/users/carol/grants')).body.map((grant: { client_id: string }) => grant.client_id), [calendar.clientId], 'one grant left')
  assertNotFound(t, await call(admin, 'DELETE', `/admin/users/carol/grants/${encodeURIComponent(printerGrant)}`), 'revoking it again')
  assertNotFound(t, await call(admin, 'DELETE', '/admin/users/carol/grants/no-such-grant'), 'an unknown grant')
  assertNotFound(t, await call(admin, 'DELETE', `/admin/users/nobody/grants/${encodeURIComponent(printerGrant)}`), 'an unknown user\'s grant')

  // A new password ends the sessions; the old one is refused.
  const cookie = browser.cookie
  t.equal(await sessionStatus(app, cookie, calendar.clientId), 200, 'signed in before')
  const changed = await call(admin, 'PUT', '/admin/users/carol/password', { password: 'a brand new password' })
  t.equal(changed.status, 204, 'password changed: 204')
  t.match(events.at(-1), { type: 'user.password_changed', userId, username: 'carol' })
  t.equal(await sessionStatus(app, cookie, calendar.clientId), 302, 'the session ended')
  t.equal((await new InjectBrowser(app).signIn('carol', 'correct horse battery')).statusCode, 401, 'the old password is refused')
  const again = new InjectBrowser(app)
  t.equal((await again.signIn('carol', 'a brand new password')).statusCode, 200, 'the new one works')
  assertBadRequest(t, await call(admin, 'PUT', '/admin/users/carol/password', { password: 'short' }), 'a short password', /password/)
  assertBadRequest(t, await call(admin, 'PUT', '/admin/users/carol/password', { password: 'a brand new password', username: 'x' }), 'an unknown field')
  assertBadRequest(t, await call(admin, 'PUT', '/admin/users/carol/password', {}), 'no password')
  assertNotFound(t, await call(admin, 'PUT', '/admin/users/nobody/password', { password: 'a brand new password' }), 'an unknown user\'s password')
  t.equal(await sessionStatus(app, again.cookie, calendar.clientId), 200, 'the refused changes ended nothing')

  // Removal: the remaining grant revoked, the session ended, the consents forgotten.
  const removed = await call(admin, 'DELETE', '/admin/users/carol')
  t.equal(removed.status, 200)
  t.same(removed.body, { user_id: userId, grants_revoked: 1 })
  t.match(events.at(-1), { type: 'user.removed', userId, username: 'carol', grants: 1 })
  t.same(await profile(app, calendarTokens), { status: 401, body: REVOKED }, 'the remaining token is refused')
  t.equal((await refresh(app, calendar, calendarTokens)).status, 400, 'its refresh token is refused')
  t.equal(await sessionStatus(app, again.cookie, calendar.clientId), 302, 'the session ended')
  t.same(await store.listConsents(userId), [], 'consents forgotten')
  t.same(await store.listUserGrants(userId), [], 'grant index empty')
  assertNotFound(t, await call(admin, 'DELETE', '/admin/users/carol'), 'removing again')
  assertNotFound(t, await call(admin, 'GET', '/admin/users/carol/grants'), 'the grants of a removed user')

  t.same(events.filter((event) => !['grant.issued', 'code.exchanged', 'consent.given', 'refresh.rotated', 'signin.failed'].includes(event.type)).map((event) => event.type), [
    'user.created', 'grant.revoked', 'user.password_changed', 'user.removed'
  ], 'one event per operator action, in order, none for a refusal')
  for (const event of events) t.notOk(JSON.stringify(event).includes('correct horse') || JSON.stringify(event).includes('brand new'), `${event.type}: no password in the event`)
})

t.test('the bearer token: 401 without it or with a wrong one, before any action', async (t) => {
  const { app, store } = await buildTestApp(t)
  const token = 'admin-api-token-0123456789abcdef'
  const admin = await adminFor(t, app, token)
  for (const authorization of [undefined, 'Bearer wrong', `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, 'Bearer ', token, `Basic ${token}`]) {
    const headers: Record<string, string> = authorization === undefined ? {} : { authorization }
    const label = authorization === undefined ? 'none' : JSON.stringify(authorization.replace(token, '<token>'))
    const list = await call(admin, 'GET', '/admin/clients', undefined, headers)
    t.equal(list.status, 401, `GET /admin/clients, ${label}: 401`)
    t.equal(list.headers['www-authenticate'], 'Bearer realm="macgate-admin"')
    const create = await call(admin, 'POST', '/admin/users', { username: 'mallory', password: 'correct horse battery' }, headers)
    t.equal(create.status, 401, `POST /admin/users, ${label}: 401`)
  }
  t.equal(await store.getUserByName('mallory'), undefined, 'no refused request created anything')
  const right = { authorization: `Bearer ${token}` }
  t.equal((await call(admin, 'GET', '/admin/clients', undefined, right)).status, 200, 'the right token: 200')
  t.equal((await call(admin, 'POST', '/admin/users', { username: 'mallory', password: 'correct horse battery' }, right)).status, 201, 'and the action is done')
  assertNotFound(t, await call(admin, 'DELETE', '/admin/users/nobody', undefined, right), 'with the token, an unknown user is a 404')
})

t.test('a fault of ours: a 500 with nothing internal in it, the cause in the log', async (t) => {
  const store = new MemoryStore()
  t.teardown(async () => await store.close())
  store.listClients = async () => { throw new TypeError('secret internal detail') }
  const log = memoryLog()
  const admin = await buildAdminServer({
    metrics: async () => ({ contentType: 'text/plain', text: '' }),
    store,
    api: { registry: new ScopeRegistry(), events: new AuditEvents() },
    log: pino({ level: 'error' }, log.stream)
  })
  t.teardown(async () => await admin.close())
  const answer = await call(admin, 'GET', '/admin/clients')
  t.same({ status: answer.status, body: answer.body }, { status: 500, body: { error: 'internal', message: 'internal error' } })
  t.match(log.lines.find((line) => line.msg === 'admin API failed'), { level: 50, err: { type: 'TypeError', message: 'secret internal detail' } }, 'the cause logged')
})

t.test('the store down: every admin endpoint answers 503 store_unavailable', { skip: process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== '' ? 'stops Redis: needs a redis-server of its own' : false }, async (t) => {
  const redis = await startRedis(t)
  const { app, store } = await buildTestApp(t, { store: 'redis', redis })
  const admin = await adminFor(t, app)
  const client = await addClient(store)
  await addUser(store, 'erin')
  t.equal((await call(admin, 'GET', '/admin/clients')).status, 200, 'up: 200')
  await redis.stop()
  const calls: Array<[InjectOptions['method'], string, unknown?]> = [
    ['GET', '/admin/clients'],
    ['POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI] }],
    ['DELETE', `/admin/clients/${client.clientId}`],
    ['POST', `/admin/clients/${client.clientId}/secret`, { grace_seconds: 0 }],
    ['POST', '/admin/users', { username: 'frank', password: 'correct horse battery' }],
    ['DELETE', '/admin/users/erin'],
    ['DELETE', '/admin/users/nobody'],
    ['PUT', '/admin/users/erin/password', { password: 'a brand new password' }],
    ['GET', '/admin/users/erin/grants'],
    ['DELETE', '/admin/users/erin/grants/g1']
  ]
  for (const [method, url, body] of calls) {
    const started = Date.now()
    const answer = await call(admin, method, url, body)
    t.equal(answer.status, 503, `${method} ${url}: 503 (got ${answer.status} ${JSON.stringify(answer.body)}, ${Date.now() - started} ms)`)
    t.equal(answer.body?.error, 'store_unavailable')
  }
})

t.test('the CLI and the API are one implementation: users remove revokes alike', async (t) => {
  const redis = await startRedis(t)
  const { app, store } = await buildTestApp(t, { store: 'redis', redis })
  const admin = await adminFor(t, app)
  const printer = await addClient(store, { name: 'Photo Printer', scope: '1 3' })
  const calendar = await addClient(store, { name: 'Calendar Sync', scope: '1 4' })

  /** A user with tokens for both apps and a session; what the removal must undo. */
  async function holder (username: string) {
    const user = await addUser(store, username)
    const browser = new InjectBrowser(app)
    await browser.signIn(user.username, user.password)
    const tokens = [await grantTokens(t, app, browser, printer, '1 3'), await grantTokens(t, app, browser, calendar, '1 4')]
    for (const held of tokens) t.equal((await profile(app, held)).status, 200, `${username}: a token works (and is cached)`)
    t.equal((await store.listUserGrants(user.userId)).length, 2)
    t.equal((await store.listConsents(user.userId)).length, 2)
    return { user, tokens, cookie: browser.cookie }
  }

  /** The state after removal, the same shape for both ways. */
  async function after (held: Awaited<ReturnType<typeof holder>>) {
    const refused = await eventually(async () => {
      for (const tokens of held.tokens) if ((await profile(app, tokens)).status !== 401) return false
      return true
    }, 2000, 10)
    return {
      refused,
      api: await Promise.all(held.tokens.map(async (tokens) => await profile(app, tokens))),
      refresh: [(await refresh(app, printer, held.tokens[0]!)).body.error, (await refresh(app, calendar, held.tokens[1]!)).body.error],
      session: await sessionStatus(app, held.cookie, printer.clientId),
      grants: await store.listUserGrants(held.user.userId),
      consents: await store.listConsents(held.user.userId),
      user: await store.getUserByName(held.user.username) ?? null,
      adminGrants: (await call(admin, 'GET', `/admin/users/${held.user.username}/grants`)).status
    }
  }

  const viaApi = await holder('removed-by-api')
  const viaCli = await holder('removed-by-cli')

  const apiAnswer = await call(admin, 'DELETE', `/admin/users/${viaApi.user.username}`)
  t.same(apiAnswer, { status: 200, body: { user_id: viaApi.user.userId, grants_revoked: 2 }, headers: apiAnswer.headers }, 'API: removed, 2 grants revoked')
  const run = await runInProcess(['users', 'remove', viaCli.user.username], cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix }))
  t.equal(run.code, 0, `CLI exits 0 (${run.stderr})`)
  t.match(run.stdout, `removed user ${viaCli.user.username}`)

  const expected = {
    refused: true,
    api: [{ status: 401, body: REVOKED }, { status: 401, body: REVOKED }],
    refresh: [96009, 96009],
    session: 302,
    grants: [],
    consents: [],
    user: null,
    adminGrants: 404
  }
  t.same(await after(viaApi), expected, 'removed through the API: tokens refused, refresh refused, session ended, nothing left')
  t.same(await after(viaCli), expected, 'removed through macgate users remove: exactly the same')
})

t.test('clients: a public client and allowed origins at registration; PATCH updates them', async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await adminFor(t, app)
  const events = recorder(app)

  const spa = await call(admin, 'POST', '/admin/clients', { name: 'SPA', redirect_uris: ['https://spa.example/cb'], public: true, allowed_origins: ['https://cdn.example'] })
  t.equal(spa.status, 201)
  t.match(spa.body, { public: true, require_pkce: true, response_types: ['code'], allowed_origins: ['https://cdn.example'] }, 'public: PKCE, code only')
  t.notOk('client_secret' in spa.body, 'no secret for a public client')
  const id = spa.body.client_id as string
  t.strictSame(await app.macgate.store.clientsOfOrigin('https://cdn.example'), [{ clientId: id, public: true }], 'the origin is indexed')

  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], public: true, require_pkce: false }), 'a public client without PKCE', /PKCE/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], public: true, resource_server: true }), 'a public resource server', /resource server/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], allowed_origins: ['https://cdn.example/'] }), 'an origin with a path', /allowed origin https:\/\/cdn\.example\/ must be an origin/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], allowed_origins: ['http://cdn.example'] }), 'an http origin off loopback', /loopback/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], allowed_origins: ['ftp://cdn.example'] }), 'not http(s)', /must be an origin/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], allowed_origins: ['not a url'] }), 'not a URL', /must be an origin/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI], allowed_origins: [`https://${'a'.repeat(300)}.example`] }), 'too long', /at most 256 characters/)
  assertBadRequest(t, await call(admin, 'POST', `/admin/clients/${id}/secret`, {}), 'a public client has no secret to rotate', /public/)

  const updated = await call(admin, 'PATCH', `/admin/clients/${id}`, { allowed_origins: ['http://localhost:5173'], response_types: ['code', 'token'] })
  t.equal(updated.status, 200)
  t.match(updated.body, { client_id: id, allowed_origins: ['http://localhost:5173'], response_types: ['code', 'token'], redirect_uris: ['https://spa.example/cb'], public: true })
  t.match(events.at(-1), { type: 'client.updated', clientId: id, fields: ['allowedOrigins', 'responseTypes'] })
  t.strictSame(await app.macgate.store.clientsOfOrigin('https://cdn.example'), [], 'the old origin is gone')
  const moved = await call(admin, 'PATCH', `/admin/clients/${id}`, { redirect_uris: ['https://app2.example/cb'], allowed_origins: [] })
  t.match(moved.body, { redirect_uris: ['https://app2.example/cb'], allowed_origins: [] }, 'an empty list removes every allowed origin')

  const confidential = await call(admin, 'POST', '/admin/clients', { name: 'Strict', redirect_uris: [REDIRECT_URI], require_pkce: true })
  assertBadRequest(t, await call(admin, 'PATCH', `/admin/clients/${confidential.body.client_id as string}`, { response_types: ['token'] }), 'PKCE with the implicit grant', /PKCE/)
  assertBadRequest(t, await call(admin, 'PATCH', `/admin/clients/${id}`, {}), 'nothing to change')
  assertBadRequest(t, await call(admin, 'PATCH', `/admin/clients/${id}`, { name: 'renamed' }), 'a field update does not take')
  assertBadRequest(t, await call(admin, 'PATCH', `/admin/clients/${id}`, { redirect_uris: ['http://evil.example/cb'] }), 'a bad redirect URI', /loopback/)
  assertNotFound(t, await call(admin, 'PATCH', '/admin/clients/1000000000000000000', { allowed_origins: [] }), 'an unknown client')
})
