// The developer console through the public surface (inject): who may use it (the config's modes,
// refused combinations, an operator's --developer), registering within the registration bounds and
// the owner's app limit, the secret shown once, editing, rotating and deleting, another user's app
// answered 404 for every action, every POST refused without its CSRF token, the audit events with
// who did it, and the app's quota use and user count as the page shows them.
import type { LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import type { AuditEvent, ClientRecord } from '../../../plugin/index.ts'
import { MemoryStore } from '../../../plugin/index.ts'
import { buildAdminServer, buildGateway } from '../../../gateway/index.ts'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { addClient, addUser, authorizeUrl, buildTestApp, callToken, InjectBrowser, REDIRECT_URI } from '../../helpers/app.ts'
import { recordingUpstream, signedInject } from '../../helpers/gateway.ts'
import { startRedis } from '../../helpers/redis.ts'
import { cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import type { GatewayConfig } from '../../../gateway/config/gateway-config.ts'

const CONSOLE = '/oauth2/developer'
const unescape = (text: string) => text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&')

const admins = new WeakMap<FastifyInstance, Promise<FastifyInstance>>()

/** The admin API beside the gateway (its own listener), on the same store and audit trail. */
async function admin (t: Test, app: FastifyInstance, options: InjectOptions | string): Promise<LightMyRequestResponse> {
  let server = admins.get(app)
  if (server === undefined) {
    server = buildAdminServer({
      metrics: async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', text: '' }),
      store: app.macgate.store,
      api: { registry: app.macgate.registry, events: app.macgate.events }
    })
    admins.set(app, server)
    t.teardown(async () => await (await server!).close())
  }
  return await (await server).inject(options)
}

function appForm ({ name = 'Weather Widget', type = 'confidential', redirectUris = [REDIRECT_URI], origins = [] as string[], scopes = ['1', '3'], grants = ['authorization_code'] } = {}): Array<[string, string]> {
  return [['name', name], ['type', type], ['redirect_uris', redirectUris.join('\n')], ['allowed_origins', origins.join('\n')], ...scopes.map((scope) => ['scope', scope] as [string, string]), ...grants.map((grant) => ['grant_types', grant] as [string, string])]
}

const errorOf = (html: string): string | undefined => {
  const match = /<p class="error" role="alert" id="error">([\s\S]*?)<\/p>/.exec(html)
  return match === null ? undefined : unescape(match[1]!)
}
const secretOf = (html: string): string | undefined => /<code id="client-secret">([^<]+)<\/code>/.exec(html)?.[1]
const listedIds = (html: string): string[] => [...html.matchAll(/<li class="app" data-client-id="([^"]+)"/g)].map((match) => match[1]!)

/** A developer signed in on their own browser, on the console page (its CSRF token read). */
async function developer (t: Test, app: Awaited<ReturnType<typeof buildTestApp>>['app'], name: string): Promise<{ browser: InjectBrowser, userId: string }> {
  const user = await addUser(app.macgate.store, name)
  const made = await admin(t, app, { method: 'PATCH', url: `/admin/users/${name}`, payload: { developer: true } })
  if (made.statusCode !== 404) t.equal(made.statusCode, 200, 'marked a developer through the admin API')
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  return { browser, userId: user.userId }
}

async function register (browser: InjectBrowser, form = appForm()): Promise<{ response: LightMyRequestResponse, clientId: string | undefined }> {
  await browser.get(`${CONSOLE}/new`)
  const response = await browser.post(`${CONSOLE}/apps`, form)
  const location = response.headers.location
  return { response, clientId: typeof location === 'string' ? location.split('/').pop() : undefined }
}

t.test('the config: off by default, "everyone" only with registration "open", refused naming the field', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal((await app.inject(CONSOLE)).statusCode, 404, 'off: no console')
  for (const registration of ['off', 'token', { mode: 'token' }] as const) {
    const store = new MemoryStore()
    t.teardown(async () => await store.close())
    await t.rejects(buildGateway({ store, config: { developerConsole: 'everyone', registration } as Partial<GatewayConfig> }),
      /developerConsole may be "everyone" only with registration "open" \(registration is "(off|token)"\)/, `everyone with ${JSON.stringify(registration)} refused`)
  }
  const store = new MemoryStore()
  t.teardown(async () => await store.close())
  await t.rejects(buildGateway({ store, config: { developerConsole: 'sometimes' } as unknown as Partial<GatewayConfig> }), /developerConsole/, 'an unknown mode refused, naming the field')
  await t.rejects(buildGateway({ store, config: { developerConsole: 'developers', developerAppLimit: 0 } as Partial<GatewayConfig> }), /developerAppLimit/, 'a limit below 1 refused')
  const open = await buildTestApp(t, { developerConsole: 'everyone', registration: 'open' })
  const user = await addUser(open.store, 'everyone1')
  const browser = new InjectBrowser(open.app)
  await browser.signIn(user.username, user.password)
  t.equal((await browser.get(CONSOLE)).statusCode, 200, 'everyone with open registration: any signed-in user')
})

t.test('who may: signed out to sign-in and back, a user not marked 403, marked by CLI or admin API 200, unmarked 403 again', async (t) => {
  const { app, store } = await buildTestApp(t, { developerConsole: 'developers' })
  const anonymous = await app.inject(CONSOLE)
  t.equal(anonymous.statusCode, 302)
  t.equal(anonymous.headers.location, '/oauth2/signin?return_to=%2Foauth2%2Fdeveloper', 'to sign-in, returning to the console')
  const signedOutPost = await app.inject({ method: 'POST', url: `${CONSOLE}/apps`, payload: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(signedOutPost.statusCode, 403, 'a POST without a session has no CSRF token either')
  const user = await addUser(store, 'carol')
  const browser = new InjectBrowser(app)
  const signedIn = await browser.signIn(user.username, user.password, CONSOLE)
  t.equal(signedIn.headers.location, CONSOLE, 'signing in returns to the console')
  const refused = await browser.get(CONSOLE)
  t.equal(refused.statusCode, 403, 'not a developer')
  t.match(refused.body, 'id="not-allowed"')
  t.equal((await browser.get(`${CONSOLE}/new`)).statusCode, 403, 'nor the form')
  t.equal((await admin(t, app, { method: 'PATCH', url: '/admin/users/nobody', payload: { developer: true } })).statusCode, 404, 'an unknown user: 404')
  t.equal((await admin(t, app, { method: 'PATCH', url: '/admin/users/carol', payload: {} })).statusCode, 400, 'developer is required')
  const events: AuditEvent[] = []
  app.macgate.events.on('audit', (event) => events.push(event))
  const marked = await admin(t, app, { method: 'PATCH', url: '/admin/users/carol', payload: { developer: true } })
  t.same(marked.json(), { username: 'carol', developer: true })
  t.equal((await browser.get(CONSOLE)).statusCode, 200, 'a developer now')
  t.equal((await store.getUserByName('carol'))?.passwordHash, (await store.getUserByName('carol'))?.passwordHash, 'the record kept')
  await admin(t, app, { method: 'PATCH', url: '/admin/users/carol', payload: { developer: false } })
  t.equal((await browser.get(CONSOLE)).statusCode, 403, 'no longer')
  t.match(events.map(({ type, ...rest }) => ({ type, ...rest })), [
    { type: 'user.developer_changed', username: 'carol', developer: true },
    { type: 'user.developer_changed', username: 'carol', developer: false }
  ])
})

t.test('register, the secret once, edit, rotate, delete; validation as registration; the events with who', async (t) => {
  const { app, store } = await buildTestApp(t, { developerConsole: 'developers', registration: { mode: 'off', scopes: ['1', '3', '4'], defaultQuotaPerMinute: 120 } })
  const { browser, userId } = await developer(t, app, 'dana')
  const events: AuditEvent[] = []
  app.macgate.events.on('audit', (event) => events.push(event))
  const form = await browser.get(`${CONSOLE}/new`)
  t.equal(form.statusCode, 200)
  t.match(form.body, 'value="4"', 'the deployment\'s scopes offered')
  t.notMatch(form.body, 'value="6"', 'and no other')
  t.equal(form.headers['x-frame-options'], 'DENY', 'the pages\' security headers')
  t.equal(form.headers['cache-control'], 'no-store')

  // Refusals: the registration endpoint's own sentences, the form shown again.
  const refusals: Array<[Array<[string, string]>, RegExp]> = [
    [appForm({ redirectUris: ['http://example.com/cb'] }), /redirect/i],
    [appForm({ redirectUris: [] }), /redirect_uris|redirect URI/],
    [appForm({ scopes: ['6'] }), /scope 6 may not be registered here/],
    [appForm({ scopes: [] }), /scope is empty/],
    [appForm({ grants: ['implicit'] }), /grant type implicit is not offered/],
    [appForm({ grants: [] }), /at least one grant type/],
    [appForm({ origins: ['https://x.example/path'] }), /allowed origin https:\/\/x\.example\/path/],
    [appForm({ name: '   ' }), /needs a name/],
    [appForm({ type: 'public', redirectUris: ['com.example.app:/cb'], name: 'x'.repeat(101) }), /client_name must be a string of 1 to 100/]
  ]
  for (const [fields, message] of refusals) {
    const { response } = await register(browser, fields)
    t.equal(response.statusCode, 400, `refused: ${String(message)}`)
    t.match(errorOf(response.body), message)
  }
  t.equal((await store.listClients()).length, 0, 'nothing registered by the refusals')
  const noCsrf = await browser.post(`${CONSOLE}/apps`, appForm(), { csrf: false })
  t.equal(noCsrf.statusCode, 403, 'no CSRF token: refused')
  const wrongCsrf = await browser.post(`${CONSOLE}/apps`, [['_csrf', 'forged'], ...appForm()], { csrf: false })
  t.equal(wrongCsrf.statusCode, 403, 'a forged CSRF token: refused')
  t.equal((await store.listClients()).length, 0, 'nothing registered without the token')

  const { response, clientId } = await register(browser, appForm({ origins: ['https://widget.example'] }))
  t.equal(response.statusCode, 303, 'registered')
  const page = await browser.get(`${CONSOLE}/apps/${clientId!}`)
  const secret = secretOf(page.body)
  t.ok(secret !== undefined && secret.length >= 40, 'the secret shown')
  t.notOk(secretOf((await browser.get(`${CONSOLE}/apps/${clientId!}`)).body), 'and only once')
  const client = (await store.getClient(clientId!))!
  t.match(client, { ownerId: userId, name: 'Weather Widget', scopes: ['1', '3'], grantTypes: ['authorization_code', 'refresh_token'], allowedOrigins: ['https://widget.example'], quotaPerMinute: 120, selfRegistration: { via: 'console', tokenEndpointAuthMethod: 'client_secret_basic' } })
  t.notOk(client.selfRegistration?.accessTokenHash, 'no RFC 7592 token: the console manages it')
  const exchanged = await app.inject({ method: 'POST', url: '/oauth2/token', payload: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT_URI, client_id: clientId!, client_secret: secret! }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.not(exchanged.statusCode, 401, 'the secret authenticates the client')
  const listed = (await admin(t, app, '/admin/clients')).json() as Array<Record<string, unknown>>
  t.match(listed.find((one) => one.client_id === clientId), { owner_id: userId, self_registered: true }, 'the admin API shows the owner and the mark')

  // Edit: as registration validates; the type is fixed.
  await browser.get(`${CONSOLE}/apps/${clientId!}`)
  const bad = await browser.post(`${CONSOLE}/apps/${clientId!}`, appForm({ redirectUris: ['ftp://x.example/cb'] }))
  t.equal(bad.statusCode, 400)
  t.ok(errorOf(bad.body), 'an edit refused with the reason')
  const edited = await browser.post(`${CONSOLE}/apps/${clientId!}`, appForm({ name: 'Weather Widget 2', redirectUris: [REDIRECT_URI, 'https://app.example.com/other'], scopes: ['1', '4'], type: 'public' }))
  t.equal(edited.statusCode, 303)
  t.match(await store.getClient(clientId!), { name: 'Weather Widget 2', redirectUris: [REDIRECT_URI, 'https://app.example.com/other'], scopes: ['1', '4'], ownerId: userId, quotaPerMinute: 120 })
  t.notOk((await store.getClient(clientId!))?.public, 'the type stays confidential')
  t.notOk((await store.getClient(clientId!))?.allowedOrigins, 'the origins cleared')

  // Rotate: the grace choice; the new secret once.
  const before = (await store.getClient(clientId!))!.secretHash
  await browser.get(`${CONSOLE}/apps/${clientId!}`)
  t.equal((await browser.post(`${CONSOLE}/apps/${clientId!}/rotate`, [['grace', '17']])).statusCode, 400, 'a grace not offered: refused')
  const rotated = await browser.post(`${CONSOLE}/apps/${clientId!}/rotate`, [['grace', '0']])
  t.equal(rotated.statusCode, 303)
  const after = (await store.getClient(clientId!))!
  t.not(after.secretHash, before, 'a new secret')
  t.ok(after.previousSecretUntil !== undefined && after.previousSecretUntil <= Date.now(), 'grace 0: the old one stops at once')
  const newSecret = secretOf((await browser.get(`${CONSOLE}/apps/${clientId!}`)).body)
  t.ok(newSecret !== undefined && newSecret !== secret, 'the new secret shown once')
  await browser.post(`${CONSOLE}/apps/${clientId!}/rotate`, [['grace', '86400']])
  t.ok((await store.getClient(clientId!))!.previousSecretUntil! > Date.now() + 86_000_000, 'grace a day: the old one keeps working')

  // Delete: the confirmation, then gone as `clients remove`.
  const confirm = await browser.get(`${CONSOLE}/apps/${clientId!}/delete`)
  t.match(confirm.body, /signs <strong id="signed-out">0 users<\/strong> out/)
  t.equal((await browser.post(`${CONSOLE}/apps/${clientId!}/delete`, [], { csrf: false })).statusCode, 403, 'no CSRF token: not deleted')
  t.ok(await store.getClient(clientId!), 'still there')
  const deleted = await browser.post(`${CONSOLE}/apps/${clientId!}/delete`, [])
  t.equal(deleted.statusCode, 303)
  t.equal(await store.getClient(clientId!), undefined, 'deleted')
  t.match((await browser.get(CONSOLE)).body, /id="notice"[^>]*>Deleted Weather Widget 2\./)

  t.match(events.filter(({ type }) => type.startsWith('client.')), [
    { type: 'client.registered', clientId, by: 'console', userId },
    { type: 'client.updated', clientId, by: 'console', userId, fields: ['name', 'redirectUris', 'allowedOrigins', 'scopes', 'grantTypes', 'responseTypes', 'selfRegistration'] },
    { type: 'client.secret_rotated', clientId, by: 'console', userId, graceSeconds: 0 },
    { type: 'client.secret_rotated', clientId, by: 'console', userId, graceSeconds: 86_400 },
    { type: 'client.removed', clientId, by: 'console', userId }
  ])
  t.equal(events.filter(({ type }) => type.startsWith('client.')).length, 5, 'one event each, none for the refusals')
})

t.test('a public app: no secret, no rotation; a native app gets no implicit grant', async (t) => {
  const { app, store } = await buildTestApp(t, { developerConsole: 'developers', registration: { mode: 'token', grantTypes: ['authorization_code', 'implicit'] } })
  const { browser } = await developer(t, app, 'erin')
  const native = await register(browser, appForm({ type: 'public', redirectUris: ['http://127.0.0.1/cb'], grants: ['authorization_code', 'implicit'] }))
  t.match(errorOf(native.response.body), /RFC 8252/, 'the registration endpoint\'s rule')
  const { clientId } = await register(browser, appForm({ type: 'public', redirectUris: ['com.example.app:/cb'] }))
  const page = await browser.get(`${CONSOLE}/apps/${clientId!}`)
  t.notOk(secretOf(page.body), 'no secret to show')
  t.notMatch(page.body, 'id="rotate"', 'no rotation offered')
  t.match(await store.getClient(clientId!), { public: true, requirePkce: true, selfRegistration: { tokenEndpointAuthMethod: 'none' } })
  t.equal((await browser.post(`${CONSOLE}/apps/${clientId!}/rotate`, [['grace', '0']])).statusCode, 400, 'rotation refused')
})

t.test('another user\'s app: not listed, 404 for every action, unchanged; the limit of apps a user owns', async (t) => {
  const { app, store } = await buildTestApp(t, { developerConsole: 'developers', developerAppLimit: 2 })
  const alice = await developer(t, app, 'alice')
  const bob = await developer(t, app, 'bob')
  const { clientId: aliceApp } = await register(alice.browser, appForm({ name: 'Alice App' }))
  const operatorApp = await addClient(store, { name: 'Operator App' })
  const bobHome = await bob.browser.get(CONSOLE)
  t.same(listedIds(bobHome.body), [], 'bob sees none of alice\'s')
  t.same(listedIds((await alice.browser.get(CONSOLE)).body), [aliceApp], 'alice sees hers, not the operator\'s')
  const unknown = '99999999999999999'
  for (const id of [aliceApp!, operatorApp.clientId, unknown, 'not-an-id']) {
    for (const path of ['', '/delete']) {
      const response = await bob.browser.get(`${CONSOLE}/apps/${id}${path}`)
      t.equal(response.statusCode, 404, `GET ${id}${path}: 404`)
      t.match(response.body, 'id="no-such-app"')
    }
    await bob.browser.get(`${CONSOLE}/new`) // a valid CSRF token of bob's own
    t.equal((await bob.browser.post(`${CONSOLE}/apps/${id}`, appForm({ name: 'Stolen' }))).statusCode, 404, `edit ${id}: 404`)
    t.equal((await bob.browser.post(`${CONSOLE}/apps/${id}/rotate`, [['grace', '0']])).statusCode, 404, `rotate ${id}: 404`)
    t.equal((await bob.browser.post(`${CONSOLE}/apps/${id}/delete`, [])).statusCode, 404, `delete ${id}: 404`)
  }
  const kept = (await store.getClient(aliceApp!))!
  t.match(kept, { name: 'Alice App' }, 'alice\'s app unchanged')
  t.notOk(kept.previousSecretHash, 'its secret not rotated')

  // The limit: two apps each.
  const second = await register(alice.browser, appForm({ name: 'Alice Two' }))
  t.equal(second.response.statusCode, 303)
  t.match((await alice.browser.get(CONSOLE)).body, 'id="at-limit"', 'the console says so')
  const third = await register(alice.browser, appForm({ name: 'Alice Three' }))
  t.equal(third.response.statusCode, 409, 'a third: refused')
  t.match(errorOf(third.response.body), /You own 2 apps, the most allowed here/)
  t.equal((await store.listClients()).filter((client: ClientRecord) => client.ownerId === alice.userId).length, 2)
  t.equal((await register(bob.browser, appForm({ name: 'Bob One' }))).response.statusCode, 303, 'bob\'s own count')

  // The operator hands the operator's app to bob, and takes it back.
  const given = await admin(t, app, { method: 'PATCH', url: `/admin/clients/${operatorApp.clientId}`, payload: { owner: 'bob' } })
  t.match(given.json(), { owner_id: bob.userId })
  t.ok(listedIds((await bob.browser.get(CONSOLE)).body).includes(operatorApp.clientId), 'listed for bob now')
  t.equal((await admin(t, app, { method: 'PATCH', url: `/admin/clients/${operatorApp.clientId}`, payload: { owner: 'nobody' } })).statusCode, 404, 'an unknown owner: 404')
  const cleared = await admin(t, app, { method: 'PATCH', url: `/admin/clients/${operatorApp.clientId}`, payload: { owner: null, quota_per_minute: 7 } })
  t.notOk((cleared.json() as Record<string, unknown>).owner_id, 'cleared')
  t.match(cleared.json(), { quota_per_minute: 7 }, 'beside another field')
  t.notOk(listedIds((await bob.browser.get(CONSOLE)).body).includes(operatorApp.clientId), 'no longer bob\'s')
})

for (const kind of ['memory', 'redis'] as const) {
  t.test(`${kind}: the app's users and this minute's use, as the console shows them`, async (t) => {
    const upstream = await recordingUpstream(t)
    const redis = kind === 'redis' ? await startRedis(t) : undefined
    const { app } = await buildTestApp(t, {
      store: kind,
      ...(redis !== undefined && { redis }),
      developerConsole: 'developers',
      upstream: upstream.url,
      routes: [{ path: '/limited/*', methods: ['GET'], scopes: [], match: 'all', quota: { perMinute: 5 } }]
    })
    const dev = await developer(t, app, 'frank')
    const { clientId } = await register(dev.browser, appForm())
    const secret = secretOf((await dev.browser.get(`${CONSOLE}/apps/${clientId!}`)).body)!
    // Two users authorize it through the code flow; one of them calls the API twice.
    let tokens: Record<string, string> = {}
    for (const name of ['gina', 'hank']) {
      const user = await addUser(app.macgate.store, name)
      const browser = new InjectBrowser(app)
      await browser.signIn(user.username, user.password)
      const url = authorizeUrl({ client_id: clientId!, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1', state: 's' })
      const consent = await browser.get(url)
      t.match(consent.body, 'id="unverified"', 'the consent page marks the console app unverified')
      const allowed = await browser.post(url, { decision: 'allow' })
      const code = new URL(String(allowed.headers.location)).searchParams.get('code')!
      const answer = await callToken(app, { client_id: clientId!, client_secret: secret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code })
      t.equal(answer.status, 200, `${name}: signed in with the new app`)
      tokens = answer.body as Record<string, string>
    }
    for (let i = 0; i < 2; i++) t.equal((await signedInject(app, { url: '/limited/x', token: tokens.access_token!, macKey: tokens.mac_key! })).statusCode, 200)
    const home = await dev.browser.get(CONSOLE)
    t.match(home.body, /<dd class="users">2 users have authorized it<\/dd>/)
    t.match(home.body, /<code>\/limited\/\*<\/code> <span class="quota-use">2 of 5<\/span> this minute/)
    const confirm = await dev.browser.get(`${CONSOLE}/apps/${clientId!}/delete`)
    t.match(confirm.body, /signs <strong id="signed-out">2 users<\/strong> out/, 'the confirmation says how many')
    await dev.browser.post(`${CONSOLE}/apps/${clientId!}/delete`, [])
    t.equal((await signedInject(app, { url: '/limited/x', token: tokens.access_token!, macKey: tokens.mac_key! })).statusCode, 401, 'deleting revoked its tokens')
    t.equal(await app.macgate.store.countConsents(clientId!), 0, 'its count gone with it')
  })
}

t.test('macgate users update NAME --developer / --no-developer, on the shared store', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const { app, store } = await buildTestApp(t, { store: 'redis', redis, developerConsole: 'developers' })
  const user = await addUser(store, 'ivy')
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  t.equal((await browser.get(CONSOLE)).statusCode, 403, 'not yet')
  const on = await runInProcess(['users', 'update', 'ivy', '--developer'], env)
  t.equal(on.code, 0, on.stderr)
  t.equal(on.stdout, 'ivy may now use the developer console\n')
  t.equal((await browser.get(CONSOLE)).statusCode, 200, 'a developer now, on the running gateway')
  const off = await runInProcess(['users', 'update', 'ivy', '--no-developer'], env)
  t.equal(off.stdout, 'ivy may no longer use the developer console\n')
  t.equal((await browser.get(CONSOLE)).statusCode, 403, 'no longer')
  t.ok(await store.getUserByName('ivy').then((record) => record?.passwordHash.startsWith('scrypt$')), 'the rest of the record kept')
  const unknown = await runInProcess(['users', 'update', 'nobody', '--developer'], env)
  t.not(unknown.code, 0)
  t.match(unknown.stderr, 'no user nobody')
  const bare = await runInProcess(['users', 'update', 'ivy'], env)
  t.match(bare.stderr, 'users update needs --developer or --no-developer')
})
