// Grant types on the client record (issue 31 §0): the CLI's short names, the admin API's RFC names,
// what existing clients keep, and both token endpoints refusing a grant the client is not
// registered for (96005 in the Xiaomi dialect, unauthorized_client in the standard one).
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { buildAdminServer } from '../../../gateway/index.ts'
import { DEVICE_CODE_GRANT, updateClient, type ClientRecord } from '../../../plugin/index.ts'
import { STANDARD_TOKEN_PATH } from '../../../plugin/oauth/standard-token-endpoint.ts'
import { addClient, buildTestApp, callToken, obtainCode, REDIRECT_URI } from '../../helpers/app.ts'
import { cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { startRedis } from '../../helpers/redis.ts'
import { assertTokenError, assertTokenSet, basicAuth, codeParams } from '../../helpers/token-checks.ts'

t.test('CLI: --grant-types by short names; code and device bring refresh_token', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const add = async (...args: string[]) => await runInProcess(['clients', 'add', '--name', 'G', '--redirect-uri', REDIRECT_URI, '--json', ...args], env)
  const idOf = (run: { stdout: string }): string => (JSON.parse(run.stdout) as { client_id: string }).client_id

  const all = idOf(await add('--grant-types', 'code, implicit,device'))
  const deviceOnly = idOf(await add('--grant-types', 'device'))
  const plain = idOf(await add())
  const listed = JSON.parse((await runInProcess(['clients', 'list', '--json'], env)).stdout) as ClientRecord[]
  const byId = (id: string): ClientRecord | undefined => listed.find((client) => client.id === id)
  t.match(byId(all), { grantTypes: ['authorization_code', 'refresh_token', 'implicit', DEVICE_CODE_GRANT], responseTypes: ['code', 'token'] })
  t.match(byId(deviceOnly), { grantTypes: ['refresh_token', DEVICE_CODE_GRANT], responseTypes: [] }, 'the device grant has no response type')
  t.match(byId(plain), { grantTypes: ['authorization_code', 'refresh_token', 'implicit'], responseTypes: ['code', 'token'] }, 'without: those of the default response types')
  const human = (await runInProcess(['clients', 'list'], env)).stdout
  t.match(human, /RESPONSE_TYPES +GRANT_TYPES +TYPE/)
  t.match(human, new RegExp(`\n${deviceOnly}  G +1 3 +- +device +confidential`))
  t.match(human, new RegExp(`\n${all}  G +1 3 +code,token +code,implicit,device +confidential`))

  const updated = await runInProcess(['clients', 'update', all, '--response-types', 'code'], env)
  t.equal(updated.code, 0, updated.stderr)
  t.match(updated.stdout, /; response types code; grant types code,device;/, 'response types alone keep the device grant')
  const narrowed = await runInProcess(['clients', 'update', all, '--grant-types', 'implicit', '--json'], env)
  t.match(JSON.parse(narrowed.stdout), { grantTypes: ['implicit'], responseTypes: ['token'] }, 'grant types replace the response types with them')

  const refusals: Array<[string[], RegExp]> = [
    [['--grant-types', 'code,password'], /^macgate: --grant-types: grant type password is not one of code, implicit, device\n/],
    [['--grant-types', ''], /^macgate: --grant-types: grant type {2}is not one of/],
    [['--grant-types', 'implicit', '--response-types', 'code'], /^macgate: response types code do not match grant types implicit/],
    [['--grant-types', 'code,implicit', '--require-pkce'], /^macgate: a client requiring PKCE cannot use response type token/]
  ]
  for (const [args, message] of refusals) {
    const run = await add(...args)
    t.not(run.code, 0, args.join(' '))
    t.match(run.stderr, message, args.join(' '))
  }
  const bad = await runInProcess(['clients', 'update', plain, '--grant-types', 'refresh'], env)
  t.match(bad.stderr, /--grant-types: grant type refresh is not one of code, implicit, device/)
})

t.test('admin API: grant_types by their RFC names', async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await buildAdminServer({
    metrics: async () => ({ contentType: 'text/plain', text: '' }),
    store: app.macgate.store,
    api: { registry: app.macgate.registry, events: app.macgate.events }
  })
  t.teardown(async () => await admin.close())
  const call = async (method: 'POST' | 'PATCH', url: string, body: object) => {
    const response = await admin.inject({ method, url, payload: body })
    return { status: response.statusCode, body: response.json() }
  }

  const created = await call('POST', '/admin/clients', { name: 'A', redirect_uris: [REDIRECT_URI], grant_types: [DEVICE_CODE_GRANT, 'authorization_code'] })
  t.equal(created.status, 201)
  t.match(created.body, { grant_types: ['authorization_code', 'refresh_token', DEVICE_CODE_GRANT], response_types: ['code'] }, 'refresh_token added, one order')
  const id = created.body.client_id as string
  const patched = await call('PATCH', `/admin/clients/${id}`, { grant_types: ['implicit'] })
  t.match(patched.body, { grant_types: ['implicit'], response_types: ['token'] })
  t.match((await call('PATCH', `/admin/clients/${id}`, { response_types: ['code'] })).body, { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] })
  const listed = (await admin.inject({ method: 'GET', url: '/admin/clients' })).json() as Array<{ client_id: string, grant_types: string[] }>
  t.strictSame(listed.find((client) => client.client_id === id)?.grant_types, ['authorization_code', 'refresh_token'], 'listed')

  const refusals: Array<[object, RegExp]> = [
    [{ grant_types: ['refresh_token'] }, /refresh_token needs a grant that issues refresh tokens/],
    [{ grant_types: ['password'] }, /grant_types/],
    [{ grant_types: [] }, /grant_types/],
    [{ grant_types: ['authorization_code'], response_types: ['code', 'token'] }, /do not match/]
  ]
  for (const [fields, message] of refusals) {
    const answer = await call('POST', '/admin/clients', { name: 'B', redirect_uris: [REDIRECT_URI], ...fields })
    t.equal(answer.status, 400, JSON.stringify(fields))
    t.match(answer.body, { error: 'invalid_request', message }, JSON.stringify(fields))
    const patch = await call('PATCH', `/admin/clients/${id}`, fields)
    t.equal(patch.status, 400, `PATCH ${JSON.stringify(fields)}`)
  }
})

async function standardToken (app: FastifyInstance, form: Record<string, string>, authorization: string): Promise<{ status: number, body: Record<string, unknown> }> {
  const response = await app.inject({ method: 'POST', url: STANDARD_TOKEN_PATH, payload: new URLSearchParams(form).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', authorization } })
  return { status: response.statusCode, body: response.json() }
}

t.test('the token endpoints refuse a grant the client is not registered for, before reading it', async (t) => {
  const { app, store } = await buildTestApp(t)
  const client = await addClient(store, { grantTypes: ['authorization_code'] })
  t.strictSame(client.client.grantTypes, ['authorization_code', 'refresh_token'])
  const basic = basicAuth(client.clientId, client.clientSecret)
  const { code } = await obtainCode(app, client.clientId, { scope: '1' })
  const { code: second } = await obtainCode(app, client.clientId, { scope: '1' })
  const issued = assertTokenSet(t, await callToken(app, codeParams(client, code)), { scope: '1' })

  await updateClient(store, client.clientId, { grantTypes: ['implicit'] })
  assertTokenError(t, await callToken(app, codeParams(client, second)), 96005, 400, 'client is not registered for grant type authorization_code')
  const refresh = { grant_type: 'refresh_token', client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: REDIRECT_URI, refresh_token: issued.refresh_token }
  assertTokenError(t, await callToken(app, refresh), 96005)
  t.strictSame(await standardToken(app, { grant_type: 'authorization_code', code: second, redirect_uri: REDIRECT_URI }, basic),
    { status: 400, body: { error: 'unauthorized_client', error_description: 'client is not registered for grant type authorization_code' } })
  t.match(await standardToken(app, { grant_type: 'refresh_token', refresh_token: issued.refresh_token }, basic), { status: 400, body: { error: 'unauthorized_client' } })
  // An unknown grant type stays unsupported, whatever the client: checked before the client is.
  assertTokenError(t, await callToken(app, { ...refresh, grant_type: 'password' }), 96006)

  // Registered again for the code grant: the code and the refresh token were left untouched.
  await updateClient(store, client.clientId, { grantTypes: ['authorization_code'] })
  assertTokenSet(t, await callToken(app, codeParams(client, second)), { scope: '1' })
  assertTokenSet(t, await callToken(app, refresh), { scope: '1' })
})

t.test('a client saved before grant types keeps the grants its response types allowed', async (t) => {
  const { app, store } = await buildTestApp(t, { store: 'redis' })
  const client = await addClient(store, { responseTypes: ['code'] })
  const { grantTypes: _dropped, ...old } = client.client
  await store.saveClient(old as ClientRecord)
  t.strictSame((await store.getClient(client.clientId))?.grantTypes, ['authorization_code', 'refresh_token'])
  const implicit = await addClient(store, { responseTypes: ['token'] })
  const { grantTypes: _also, ...oldImplicit } = implicit.client
  await store.saveClient(oldImplicit as ClientRecord)
  t.strictSame((await store.getClient(implicit.clientId))?.grantTypes, ['implicit'], 'token alone: the implicit grant')
  const { code } = await obtainCode(app, client.clientId, { scope: '1' })
  const issued = assertTokenSet(t, await callToken(app, codeParams(client, code)), { scope: '1' })
  assertTokenSet(t, await callToken(app, { grant_type: 'refresh_token', client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: REDIRECT_URI, refresh_token: issued.refresh_token }), { scope: '1' })
})
