// The admin API (gateway/admin-api.ts) on the admin listener, built with a test gateway's store,
// registry and audit trail: the clients' endpoints, their successes and refusals, strict bodies and
// audit events. The users': admin-api-users.test.ts; the bearer token, faults and a store outage:
// admin-api-guards.test.ts.
import t from 'tap'
import { type NewClient, registerClient } from '../../../plugin/index.ts'
import { buildTestApp, callToken, obtainCode, REDIRECT_URI } from '../../helpers/app.ts'
import { type Tokens } from '../../helpers/grants.ts'
import { adminFor, assertBadRequest, assertNotFound, call, ISO, profile, recorder, refresh, REVOKED } from '../../helpers/admin-api.ts'

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
