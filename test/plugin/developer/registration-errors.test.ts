// The registration endpoints' refusals (RFC 7591 §3.2.2, RFC 7592, contract §12), through inject:
// every metadata error, the initial access token used up, expired (the clock stepped) and
// revoked, the open mode's rate limit by address (an IPv6 caller by its /64), the management
// endpoints' single 401, and the deployment's bounds.
import type { FastifyInstance, InjectOptions } from 'fastify'
import t, { type Test } from 'tap'
import { buildAdminServer } from '../../../gateway/index.ts'
import { createRegistrationToken, registerClient, ScopeRegistry } from '../../../plugin/index.ts'
import { buildTestApp } from '../../helpers/app.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { startRedis } from '../../helpers/redis.ts'

const REDIRECT = 'https://dev.example/cb'
const GOOD = { client_name: 'Dev', redirect_uris: [REDIRECT] }

interface Answer { status: number, body: any, headers: Record<string, unknown> }

async function send (app: FastifyInstance, method: InjectOptions['method'], url: string, body?: unknown, headers: Record<string, string> = {}, remoteAddress?: string): Promise<Answer> {
  const response = await app.inject({
    method,
    url,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
    ...(body !== undefined && { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    ...(remoteAddress !== undefined && { remoteAddress })
  })
  const json = String(response.headers['content-type']).startsWith('application/json')
  return { status: response.statusCode, body: json ? JSON.parse(response.body) : response.body === '' ? undefined : response.body, headers: response.headers }
}

const register = async (app: FastifyInstance, body: unknown, token?: string, remoteAddress?: string): Promise<Answer> =>
  await send(app, 'POST', '/oauth2/register', body, token === undefined ? {} : { authorization: `Bearer ${token}` }, remoteAddress)

function assertError (t: Test, answer: Answer, error: string, description: RegExp, status = 400): void {
  t.equal(answer.status, status, `${status} ${error} (${JSON.stringify(answer.body)})`)
  t.strictSame(Object.keys(answer.body ?? {}), ['error', 'error_description'])
  t.equal(answer.body?.error, error)
  t.match(answer.body?.error_description, description)
  t.equal(answer.headers['cache-control'], 'no-store')
}

function assertBearer (t: Test, answer: Answer, description: RegExp): void {
  assertError(t, answer, 'invalid_token', description, 401)
  t.match(answer.headers['www-authenticate'], /^Bearer realm="macgate"/, 'WWW-Authenticate: Bearer')
}

t.test('registration off (the default): no endpoint, nothing advertised', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal((await send(app, 'POST', '/oauth2/register', GOOD)).status, 404)
  t.equal((await send(app, 'GET', '/oauth2/register/1000000000000000001')).status, 404)
  const metadata = await send(app, 'GET', '/.well-known/oauth-authorization-server')
  t.notOk('registration_endpoint' in metadata.body)
})

t.test('every metadata error, in RFC 7591 §3.2.2 form', async (t) => {
  const { app, store } = await buildTestApp(t, { registration: { mode: 'open', scopes: ['1', '3'], grantTypes: ['authorization_code', 'implicit'] }, registrationRateLimit: 1000 })
  const metadata = await send(app, 'GET', '/.well-known/oauth-authorization-server')
  t.match(metadata.body.registration_endpoint, /\/oauth2\/register$/)
  const cases: Array<[unknown, string, RegExp]> = [
    ['{"client_name":', 'invalid_client_metadata', /not JSON/],
    [[GOOD], 'invalid_client_metadata', /JSON object/],
    [{ ...GOOD, software_statement: 'eyJhbGciOiJub25lIn0.e30.' }, 'invalid_software_statement', /not accepted/],
    [{ ...GOOD, token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata', /token_endpoint_auth_method must be one of client_secret_basic, client_secret_post, none/],
    [{ ...GOOD, grant_types: ['password'] }, 'invalid_client_metadata', /grant type password is not one of/],
    [{ ...GOOD, grant_types: 'authorization_code' }, 'invalid_client_metadata', /grant_types must be an array of strings/],
    [{ ...GOOD, grant_types: ['refresh_token'] }, 'invalid_client_metadata', /refresh_token needs a grant/],
    [{ ...GOOD, grant_types: [] }, 'invalid_client_metadata', /at least one grant type is required/],
    [{ ...GOOD, grant_types: ['urn:ietf:params:oauth:grant-type:device_code'] }, 'invalid_client_metadata', /device_code is not offered to registered clients here/],
    [{ ...GOOD, grant_types: ['authorization_code'], response_types: ['code', 'token'] }, 'invalid_client_metadata', /do not agree/],
    [{ ...GOOD, response_types: ['token'] }, 'invalid_client_metadata', /do not agree/],
    [{ client_name: 'Dev' }, 'invalid_redirect_uri', /redirect_uris is required/],
    [{ ...GOOD, redirect_uris: [] }, 'invalid_redirect_uri', /1 to 20/],
    [{ ...GOOD, redirect_uris: REDIRECT }, 'invalid_redirect_uri', /array of URIs/],
    [{ ...GOOD, redirect_uris: [1] }, 'invalid_redirect_uri', /array of URIs/],
    [{ ...GOOD, redirect_uris: ['http://dev.example/cb'] }, 'invalid_redirect_uri', /http is allowed only for loopback hosts/],
    [{ ...GOOD, redirect_uris: ['https://dev.example/cb#x'] }, 'invalid_redirect_uri', /fragment/],
    [{ ...GOOD, redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri', /absolute http\(s\) URI/],
    [{ ...GOOD, redirect_uris: ['com.example.app:/cb'] }, 'invalid_redirect_uri', /private-use scheme only for a public client/],
    [{ ...GOOD, redirect_uris: ['https.example.app:/cb'], token_endpoint_auth_method: 'none' }, 'invalid_redirect_uri', /private-use scheme URI/],
    [{ ...GOOD, redirect_uris: ['http://127.0.0.1/cb'], token_endpoint_auth_method: 'none', grant_types: ['implicit'] }, 'invalid_client_metadata', /native app .* may not use the implicit grant/],
    [{ ...GOOD, scope: '1 4' }, 'invalid_client_metadata', /scope 4 may not be registered here \(allowed: 1 3\)/],
    [{ ...GOOD, scope: ' ' }, 'invalid_client_metadata', /scope is empty/],
    [{ ...GOOD, scope: ['1'] }, 'invalid_client_metadata', /scope must be a string/],
    [{ ...GOOD, client_name: 'x'.repeat(101) }, 'invalid_client_metadata', /client_name must be a string of 1 to 100/],
    [{ ...GOOD, client_uri: 'http://dev.example' }, 'invalid_client_metadata', /client_uri must be an https URL/],
    [{ ...GOOD, logo_uri: 'not a url' }, 'invalid_client_metadata', /logo_uri must be an https URL/],
    [{ ...GOOD, contacts: 'dev@dev.example' }, 'invalid_client_metadata', /contacts must be an array of strings/],
    [{ ...GOOD, contacts: Array(11).fill('a@b.example').map((c, i) => `${i}${c}`) }, 'invalid_client_metadata', /at most 10/],
    [{ ...GOOD, contacts: [''] }, 'invalid_client_metadata', /contacts must be 1 to 320 characters each/],
    [{ ...GOOD, software_id: 7 }, 'invalid_client_metadata', /software_id must be a string/]
  ]
  for (const [body, error, description] of cases) {
    await t.test(JSON.stringify(body).slice(0, 90), async (t) => { assertError(t, await register(app, body), error, description) })
  }
  const media = await send(app, 'POST', '/oauth2/register', 'client_name=Dev', { 'content-type': 'application/x-www-form-urlencoded' })
  t.equal(media.status, 415, 'JSON only')
  const huge = await register(app, { ...GOOD, client_name: 'x'.repeat(20_000) })
  t.equal(huge.status, 413, 'a body past 16 KiB')
  t.strictSame(await store.listClients(), [], 'nothing was registered')

  // What is left out gets the defaults: the code grant, the deployment's scopes, a plain name.
  const defaults = await register(app, { redirect_uris: [REDIRECT] })
  t.equal(defaults.status, 201)
  t.match(defaults.body, { client_name: 'Unnamed app', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], scope: '1 3', token_endpoint_auth_method: 'client_secret_basic' })
  const implicitSpa = await register(app, { redirect_uris: ['https://spa.example/cb'], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'implicit'] })
  t.equal(implicitSpa.status, 201, 'the implicit grant where the deployment offers it, for an app that is not native')
  t.notOk('client_secret' in implicitSpa.body, 'a public client gets no secret')
  t.match(await store.getClient(implicitSpa.body.client_id), { public: true, requirePkce: true, responseTypes: ['code', 'token'] })
})

t.test('token mode: the initial access token missing, unknown, used up, expired, revoked', async (t) => {
  const { now: clock, step } = steppedClock(Date.now())
  const { app, store } = await buildTestApp(t, { registration: 'token', clock })
  assertBearer(t, await register(app, GOOD), /an initial access token is required/)
  assertBearer(t, await register(app, GOOD, undefined), /required/)
  assertBearer(t, await send(app, 'POST', '/oauth2/register', GOOD, { authorization: 'Basic abc' }), /required/)
  assertBearer(t, await register(app, GOOD, 'not-a-token'), /unknown, used up, expired or revoked/)

  const { token: twice, record } = await createRegistrationToken(store, { uses: 2 }, undefined, clock)
  assertError(t, await register(app, { ...GOOD, redirect_uris: ['http://dev.example/cb'] }, twice), 'invalid_redirect_uri', /loopback/)
  t.equal((await store.listRegistrationTokens())[0]?.usesLeft, 2, 'a refused registration does not spend a use')
  t.equal((await register(app, GOOD, twice)).status, 201)
  t.equal((await register(app, GOOD, twice)).status, 201)
  assertBearer(t, await register(app, GOOD, twice), /used up/)
  t.strictSame(await store.listRegistrationTokens(), [], 'gone once used up')
  t.equal(record.uses, 2)

  const { token: daily } = await createRegistrationToken(store, {}, undefined, clock)
  step(86_400_000)
  assertBearer(t, await register(app, GOOD, daily), /expired/)

  const admin = await buildAdminServer({
    metrics: async () => ({ contentType: 'text/plain', text: '' }),
    store,
    api: { registry: app.macgate.registry, events: app.macgate.events, clock }
  })
  t.teardown(async () => await admin.close())
  const made = await send(admin, 'POST', '/admin/registration-tokens', { uses: 5, expires_in: 600 })
  t.equal(made.status, 201)
  t.match(made.body, { id: /^[A-Za-z0-9_-]{12}$/, uses: 5, uses_left: 5, expires_at: new Date(clock() + 600_000).toISOString(), token: /^[A-Za-z0-9_-]{43}$/ })
  t.equal((await send(admin, 'POST', '/admin/registration-tokens')).body.uses, 1, 'no body: the defaults')
  const listed = await send(admin, 'GET', '/admin/registration-tokens')
  t.strictSame(listed.body.map((one: { id: string }) => one.id).sort(), [made.body.id, (await store.listRegistrationTokens()).find((one) => one.id !== made.body.id)!.id].sort())
  t.notOk(JSON.stringify(listed.body).includes(made.body.token), 'the value is never listed')
  t.equal((await register(app, GOOD, made.body.token)).status, 201)
  t.equal((await send(admin, 'GET', '/admin/registration-tokens')).body.find((one: { id: string }) => one.id === made.body.id).uses_left, 4)
  t.equal((await send(admin, 'DELETE', `/admin/registration-tokens/${made.body.id as string}`)).status, 204)
  assertBearer(t, await register(app, GOOD, made.body.token), /revoked/)
  t.equal((await send(admin, 'DELETE', `/admin/registration-tokens/${made.body.id as string}`)).status, 404)
  for (const body of [{ uses: 0 }, { expires_in: 0 }, { uses: 'many' }, { other: 1 }]) t.equal((await send(admin, 'POST', '/admin/registration-tokens', body)).status, 400, JSON.stringify(body))
  const clients = await send(admin, 'GET', '/admin/clients')
  t.ok(clients.body.every((client: { self_registered: boolean }) => client.self_registered), 'the admin API marks them self-registered')
})

t.test('open mode: limited per address and minute, an IPv6 caller by its /64', async (t) => {
  const clock = steppedClock(Date.now())
  const { app } = await buildTestApp(t, { registration: 'open', registrationRateLimit: 2, clock: clock.now })
  t.equal((await register(app, GOOD, undefined, '2001:db8:1:2::1')).status, 201)
  t.equal((await register(app, GOOD, undefined, '2001:db8:1:2:ffff:1:2:3')).status, 201)
  const limited = await register(app, GOOD, undefined, '2001:db8:1:2::99')
  t.equal(limited.status, 429, 'the third from the same /64')
  t.equal(limited.body.error, 'temporarily_unavailable')
  t.match(limited.headers['retry-after'], /^[1-9][0-9]*$/)
  t.equal((await register(app, { not: 'even valid' }, undefined, '2001:db8:1:2::99')).status, 429, 'counted before the metadata is read')
  t.equal((await register(app, GOOD, undefined, '2001:db8:1:3::1')).status, 201, 'the next /64 is another caller')
  t.equal((await register(app, GOOD, undefined, '2001:db8:1:3::')).status, 201, 'the same /64, however it is written')
  t.equal((await register(app, GOOD, undefined, '2001:db8:1:3:0:0:0:7')).status, 429)
  t.equal((await register(app, GOOD, undefined, '::1')).status, 201)
  t.equal((await register(app, GOOD, undefined, '192.0.2.1')).status, 201)
  t.equal((await register(app, GOOD, undefined, '::ffff:192.0.2.1')).status, 201, 'an IPv4-mapped address is its IPv4 one')
  t.equal((await register(app, GOOD, undefined, '192.0.2.1')).status, 429)
  clock.step(61_000)
  t.equal((await register(app, GOOD, undefined, '192.0.2.1')).status, 201, 'a minute later')
})

t.test('RFC 7592: one 401 for a missing or wrong token and an unknown client; PUT checks', async (t) => {
  const { app, store } = await buildTestApp(t, { registration: 'open' })
  const first = (await register(app, { ...GOOD, contacts: ['a@dev.example'] })).body
  const second = (await register(app, GOOD)).body
  const uri = `/oauth2/register/${first.client_id as string}`
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  assertBearer(t, await send(app, 'GET', uri), /registration access token is required/)
  assertBearer(t, await send(app, 'GET', uri, undefined, bearer(`${first.registration_access_token as string}x`)), /not valid/)
  assertBearer(t, await send(app, 'GET', uri, undefined, bearer(second.registration_access_token)), /not valid/)
  assertBearer(t, await send(app, 'GET', '/oauth2/register/1000000000000000001', undefined, bearer(first.registration_access_token)), /not valid/)
  assertBearer(t, await send(app, 'GET', '/oauth2/register/abc', undefined, bearer(first.registration_access_token)), /not valid/)
  assertBearer(t, await send(app, 'DELETE', uri, undefined, bearer(second.registration_access_token)), /not valid/)
  const operators = await registerClient(store, new ScopeRegistry(), { name: 'Operator App', redirectUris: [REDIRECT] })
  assertBearer(t, await send(app, 'GET', `/oauth2/register/${operators.client.id}`, undefined, bearer(first.registration_access_token)), /not valid/)

  const put = async (body: unknown) => await send(app, 'PUT', uri, body, bearer(first.registration_access_token))
  assertError(t, await put({ ...GOOD }), 'invalid_client_metadata', /client_id must be the client's own/)
  assertError(t, await put({ ...GOOD, client_id: second.client_id }), 'invalid_client_metadata', /client_id must be the client's own/)
  assertError(t, await put({ ...GOOD, client_id: first.client_id, client_secret: 'guess' }), 'invalid_client_metadata', /client_secret does not match/)
  assertError(t, await put({ ...GOOD, client_id: first.client_id, token_endpoint_auth_method: 'none' }), 'invalid_client_metadata', /public \(none\) and confidential/)
  assertError(t, await put({ ...GOOD, client_id: first.client_id, redirect_uris: ['http://dev.example/cb'] }), 'invalid_redirect_uri', /loopback/)
  t.match((await send(app, 'GET', uri, undefined, bearer(first.registration_access_token))).body, { contacts: ['a@dev.example'] }, 'a refused PUT changes nothing')
  const ok = await put({ client_id: first.client_id, client_secret: first.client_secret, redirect_uris: ['https://dev.example/new'], client_name: 'Renamed', token_endpoint_auth_method: 'client_secret_post' })
  t.equal(ok.status, 200)
  t.match(ok.body, { client_name: 'Renamed', redirect_uris: ['https://dev.example/new'], token_endpoint_auth_method: 'client_secret_post' })
  t.notOk('contacts' in ok.body)
  t.equal((await send(app, 'DELETE', uri, undefined, bearer(first.registration_access_token))).status, 204)
  assertBearer(t, await send(app, 'DELETE', uri, undefined, bearer(first.registration_access_token)), /not valid/)
  t.equal((await send(app, 'GET', `/oauth2/register/${second.client_id as string}`, undefined, bearer(second.registration_access_token))).status, 200, 'the other registration lives on')
})

t.test('the deployment\'s bounds are checked at start', async (t) => {
  await t.rejects(buildTestApp(t, { registration: { mode: 'open', scopes: ['99'] } }), /registration\.scopes has scope 99, which is not in the permission registry/)
  await t.rejects(buildTestApp(t, { registration: { mode: 'open', grantTypes: ['refresh_token'] } }), /registration\.grantTypes: grant type refresh_token needs/)
  await t.rejects(buildTestApp(t, { registration: 'sometimes' as 'open' }), /registration/)
  const { app } = await buildTestApp(t, { registration: { mode: 'open', defaultQuotaPerMinute: 0 } })
  const answer = await register(app, GOOD)
  t.equal((await app.macgate.store.getClient(answer.body.client_id))?.quotaPerMinute, 0, 'the default quota')
})

t.test('the store away: 503 temporarily_unavailable, never a 401 or a 500', { skip: process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== '' ? 'stops Redis: needs a redis-server of its own' : false }, async (t) => {
  const redis = await startRedis(t)
  const open = await buildTestApp(t, { store: 'redis', redis, registration: 'open' })
  const tokened = await buildTestApp(t, { store: 'redis', redis, registration: 'token' })
  const made = (await register(open.app, GOOD)).body
  await redis.stop()
  for (const [label, answer] of [
    ['open registration', await register(open.app, GOOD)],
    ['token registration', await register(tokened.app, GOOD, 'some-token')],
    ['RFC 7592 GET', await send(open.app, 'GET', `/oauth2/register/${made.client_id as string}`, undefined, { authorization: `Bearer ${made.registration_access_token as string}` })]
  ] as const) {
    t.equal(answer.status, 503, label)
    t.equal(answer.body.error, 'temporarily_unavailable', label)
  }
})
