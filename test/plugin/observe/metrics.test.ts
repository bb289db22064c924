// The Prometheus metrics as a scraper reads them: the text of an admin listener's /metrics over the
// gateway's registry, parsed by hand (helpers/metrics-text.ts). Each verification outcome, the
// token cache, the token and authorization endpoints, revocations, Redis command latency and the
// request histogram's route label, each driven a known number of times and counted exactly.
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { buildAdminServer } from '../../../gateway/index.ts'
import { Metrics } from '../../../plugin/observe/metrics.ts'
import { mintToken, newGrantId } from '../../../plugin/access/credentials.ts'
import type { Store } from '../../../plugin/store/store.ts'
import { addClient, authorizeUrl, callToken, InjectBrowser, addUser, REDIRECT_URI } from '../../helpers/app.ts'
import { API_HOST, awayFromMinuteEdge, buildTestGateway, echoRoutes, liveToken, nonceAt, signedInject, type LiveTokens } from '../../helpers/gateway.ts'
import { eventually } from '../../helpers/live.ts'
import { parseMetrics, type MetricsText } from '../../helpers/metrics-text.ts'

const OUTCOMES = ['ok', 'malformed_header', 'unknown_token', 'mac_mismatch', 'stale_nonce', 'replayed_nonce',
  'query_binding', 'scope_denied', 'quota_exceeded', 'bad_request', 'store_unavailable', 'internal']

const sharedRedis = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''

/** An admin listener (inject only) serving the gateway's registry; resolves to a scrape function. */
async function scraper (t: Test, app: FastifyInstance, store: Store): Promise<() => Promise<MetricsText>> {
  const registry = app.macgate.metrics.registry
  const admin = await buildAdminServer({ metrics: async () => ({ contentType: registry.contentType, text: await registry.metrics() }), store })
  t.teardown(async () => await admin.close())
  return async () => {
    const response = await admin.inject({ url: '/metrics' })
    if (response.statusCode !== 200) throw new Error(`/metrics answered ${response.statusCode}`)
    if (!String(response.headers['content-type']).startsWith('text/plain')) throw new Error(`/metrics content-type ${String(response.headers['content-type'])}`)
    return parseMetrics(response.body)
  }
}

function key (labels: Record<string, string>): string {
  return Object.keys(labels).sort().map((name) => `${name}=${labels[name]}`).join(',')
}

/** Every label set of `name` whose value changed between two scrapes, with the change. */
function changes (before: MetricsText, after: MetricsText, name: string): Record<string, number> {
  const old = new Map(before.find(name).map((sample) => [key(sample.labels), sample.value]))
  const moved: Record<string, number> = {}
  for (const sample of after.find(name)) {
    const delta = sample.value - (old.get(key(sample.labels)) ?? 0)
    if (delta !== 0) moved[key(sample.labels)] = delta
  }
  for (const [labels, value] of old) if (after.find(name).every((sample) => key(sample.labels) !== labels) && value !== 0) moved[labels] = -value
  return moved
}

const verifications = (before: MetricsText, after: MetricsText): Record<string, number> => changes(before, after, 'macgate_verifications_total')

t.test('every verification outcome is exposed, and each moves by exactly the requests that had it', async (t) => {
  const { app, store } = await buildTestGateway(t)
  const scrape = await scraper(t, app, store)
  const first = await scrape()
  t.equal(first.types.get('macgate_verifications_total'), 'counter')
  t.strictSame(first.labelValues('macgate_verifications_total', 'outcome').sort(), [...OUTCOMES].sort(), 'every outcome has a series from the start')

  const token = await liveToken(app)
  const call = async (extra: Partial<Parameters<typeof signedInject>[1]> = {}) =>
    await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey, ...extra })

  /** Runs `step`, then asserts that the outcome counters moved by exactly `expected`. */
  async function step (name: string, expected: Record<string, number>, run: () => Promise<number[]>, statuses: number[]): Promise<void> {
    const before = await scrape()
    t.strictSame(await run(), statuses, `${name}: statuses`)
    const after = await scrape()
    t.strictSame(verifications(before, after), Object.fromEntries(Object.entries(expected).map(([outcome, n]) => [`outcome=${outcome}`, n])), `${name}: counted ${JSON.stringify(expected)}`)
  }

  await awayFromMinuteEdge()
  await step('three signed requests', { ok: 3 }, async () => [(await call()).statusCode, (await call()).statusCode, (await call()).statusCode], [200, 200, 200])
  await step('two with the wrong mac_key', { mac_mismatch: 2 }, async () => [(await call({ macKey: 'not-the-key' })).statusCode, (await call({ macKey: 'x' })).statusCode], [401, 401])
  await step('a stale and a future nonce', { stale_nonce: 2 }, async () => [(await call({ nonce: nonceAt(-6) })).statusCode, (await call({ nonce: nonceAt(6) })).statusCode], [401, 401])
  const nonce = nonceAt()
  await step('a nonce twice', { ok: 1, replayed_nonce: 1 }, async () => [(await call({ nonce })).statusCode, (await call({ nonce })).statusCode], [200, 401])
  await step('a token never issued, and garbage', { unknown_token: 2 }, async () => [
    (await call({ token: mintToken(app.macgate.secret, newGrantId()) })).statusCode,
    (await call({ token: 'garbage' })).statusCode
  ], [401, 401])
  const openIdOnly = await liveToken(app, { scope: '3' })
  await step('a token without the route\'s scope', { scope_denied: 1 }, async () => [(await call({ token: openIdOnly.accessToken, macKey: openIdOnly.macKey })).statusCode], [403])
  await step('a token parameter of another token', { query_binding: 1 }, async () => [(await call({ url: `/user/profile?token=${openIdOnly.accessToken}` })).statusCode], [401])
  await step('no header, another scheme, a header that does not parse', { malformed_header: 3 }, async () => [
    (await app.inject({ url: '/user/profile', headers: { host: API_HOST } })).statusCode,
    (await app.inject({ url: '/user/profile', headers: { host: API_HOST, authorization: 'Bearer abc' } })).statusCode,
    (await app.inject({ url: '/user/profile', headers: { host: API_HOST, authorization: 'MAC access_token=unquoted' } })).statusCode
  ], [401, 401, 401])
  await step('requests outside the open API', {}, async () => [
    (await app.inject({ url: '/oauth2/signin' })).statusCode,
    (await app.inject({ url: `/nope-${randomBytes(4).toString('hex')}`, headers: { host: API_HOST } })).statusCode
  ], [200, 404])
})

t.test('nonces held, and the memory they take (embedded store)', async (t) => {
  const { app, store } = await buildTestGateway(t)
  const scrape = await scraper(t, app, store)
  const token = await liveToken(app)
  const before = await scrape()
  t.equal(before.value('macgate_nonces_held'), 0)
  t.equal(before.types.get('macgate_nonces_held'), 'gauge')
  await awayFromMinuteEdge()
  for (let i = 0; i < 3; i++) t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })).statusCode, 200)
  const after = await scrape()
  t.equal(after.value('macgate_nonces_held'), 3, 'one per verified request')
  t.ok((after.value('macgate_nonce_memory_bytes') ?? 0) >= 64 * 64 * 8, 'a bucket\'s tables')
})

t.test('token cache: hits, misses and entries', async (t) => {
  const { app, store } = await buildTestGateway(t)
  const scrape = await scraper(t, app, store)
  const token = await liveToken(app)
  const state = (m: MetricsText) => ({
    hit: m.value('macgate_token_cache_lookups_total', { result: 'hit' }),
    miss: m.value('macgate_token_cache_lookups_total', { result: 'miss' }),
    entries: m.value('macgate_token_cache_entries')
  })
  const start = state(await scrape())
  t.strictSame(start, { hit: 0, miss: 0, entries: 0 }, 'nothing looked up yet')
  t.equal((await scrape()).types.get('macgate_token_cache_entries'), 'gauge')

  await awayFromMinuteEdge()
  const call = async (accessToken = token.accessToken) => (await signedInject(app, { url: '/user/profile', token: accessToken, macKey: token.macKey })).statusCode
  t.equal(await call(), 200)
  t.strictSame(state(await scrape()), { hit: 0, miss: 1, entries: 1 }, 'the first call: a miss, then cached')
  t.equal(await call(), 200)
  t.equal(await call(), 200)
  t.strictSame(state(await scrape()), { hit: 2, miss: 1, entries: 1 }, 'then hits')
  const forged = mintToken(app.macgate.secret, newGrantId())
  t.equal(await call(forged), 401)
  t.equal(await call(forged), 401)
  t.strictSame(state(await scrape()), { hit: 3, miss: 2, entries: 2 }, 'an unknown tagged token: a miss, remembered as unknown, then a hit')
  t.equal(await call('garbage'), 401)
  t.strictSame(state(await scrape()), { hit: 3, miss: 3, entries: 2 }, 'an untagged value: a miss, never an entry')
})

t.test('RFC 7009 revocation: heard on the revocation channel, and the token leaves the cache', async (t) => {
  const { app, store } = await buildTestGateway(t)
  const scrape = await scraper(t, app, store)
  const token = await liveToken(app)
  t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })).statusCode, 200)
  const before = await scrape()
  t.equal(before.value('macgate_token_cache_entries'), 1)
  await revoke(app, token, token.accessToken)
  const after = await scrape()
  t.strictSame(changes(before, after, 'macgate_revocations_received_total'), { '': 1 }, 'one access token hash heard')
  t.equal(after.value('macgate_token_cache_flushes_total'), 0, 'no flush')
  t.equal(after.value('macgate_token_cache_entries'), 0, 'the revoked token left the cache')
  await revoke(app, token, mintToken(app.macgate.secret, newGrantId()))
  t.strictSame(changes(after, await scrape(), 'macgate_revocations_received_total'), {}, 'an unknown token: nothing revoked, nothing heard')
})

async function revoke (app: FastifyInstance, token: LiveTokens, value: string): Promise<void> {
  const response = await app.inject({
    method: 'POST',
    url: '/oauth2/revoke',
    payload: new URLSearchParams({ token: value, client_id: token.clientId, client_secret: token.clientSecret }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' }
  })
  if (response.statusCode !== 200) throw new Error(`revoke answered ${response.statusCode} ${response.body}`)
}

t.test('token endpoint: issued and each error kind, by grant type; never the client\'s own grant_type text', async (t) => {
  const { app, store } = await buildTestGateway(t)
  const scrape = await scraper(t, app, store)
  const name = 'macgate_token_requests_total'

  let before = await scrape()
  const token = await liveToken(app)
  let after = await scrape()
  t.strictSame(changes(before, after, name), { 'grant_type=authorization_code,result=issued': 1 }, 'a code exchanged')

  const common = { client_id: token.clientId, client_secret: token.clientSecret, redirect_uri: REDIRECT_URI }
  before = after
  t.equal((await callToken(app, { ...common, grant_type: 'refresh_token', refresh_token: token.refreshToken })).status, 200)
  after = await scrape()
  t.strictSame(changes(before, after, name), { 'grant_type=refresh_token,result=issued': 1 }, 'a refresh')

  before = after
  t.equal((await callToken(app, { ...common, grant_type: 'authorization_code', code: token.code })).status, 400)
  t.equal((await callToken(app, { ...common, grant_type: 'authorization_code', code: token.code })).status, 400)
  after = await scrape()
  t.strictSame(changes(before, after, name), { 'grant_type=authorization_code,result=invalidCode': 2 }, 'a spent code, twice')

  const invented = `password${randomBytes(3).toString('hex')}`
  before = after
  t.equal((await callToken(app, { ...common, grant_type: invented })).status, 400)
  t.equal((await callToken(app, { ...common })).status, 400)
  after = await scrape()
  t.strictSame(changes(before, after, name), {
    'grant_type=other,result=unsupportedGrantType': 1,
    'grant_type=none,result=invalidRequest': 1
  }, 'an unsupported grant_type is "other"; none given is "none"')
  t.notOk(after.text.includes(invented), 'the client\'s grant_type text is no label')
  t.strictSame(after.labelValues(name, 'grant_type').filter((value) => !['authorization_code', 'refresh_token', 'other', 'none'].includes(value)), [], 'grant_type labels: a closed set')
})

t.test('authorizations: sign_in, consent_shown, issued, denied, refused', async (t) => {
  const { app, store } = await buildTestGateway(t)
  const scrape = await scraper(t, app, store)
  const { clientId } = await addClient(store)
  const user = await addUser(store)
  const url = authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' })
  const browser = new InjectBrowser(app)

  async function step (name: string, expected: Record<string, number>, run: () => Promise<number[]>, statuses: number[]): Promise<void> {
    const before = await scrape()
    t.strictSame(await run(), statuses, `${name}: statuses`)
    const moved = changes(before, await scrape(), 'macgate_authorizations_total')
    t.strictSame(moved, Object.fromEntries(Object.entries(expected).map(([outcome, n]) => [`outcome=${outcome}`, n])), `${name}: ${JSON.stringify(expected)}`)
  }

  await step('signed out', { sign_in: 1 }, async () => [(await browser.get(url)).statusCode], [302])
  t.equal((await browser.signIn(user.username, user.password)).statusCode, 200)
  await step('the consent page', { consent_shown: 1 }, async () => [(await browser.get(url)).statusCode], [200])
  await step('allowed', { issued: 1 }, async () => [(await browser.post(url, { decision: 'allow' })).statusCode], [303])
  await step('shown again, then denied', { consent_shown: 1, denied: 1 }, async () => [(await browser.decide(url, 'deny')).statusCode], [303])
  await step('an unknown client', { refused: 1 }, async () => [(await browser.get(authorizeUrl({ client_id: 'no-such-client', redirect_uri: REDIRECT_URI, response_type: 'code' }))).statusCode], [400])
})

t.test('request duration: labelled by the configured route, never by the path as sent', async (t) => {
  const { app, store } = await buildTestGateway(t, { config: { routes: echoRoutes } })
  const scrape = await scraper(t, app, store)
  const token = await liveToken(app)
  const random = randomBytes(6).toString('hex')
  t.equal((await signedInject(app, { url: `/user/profile?x=${random}`, token: token.accessToken, macKey: token.macKey })).statusCode, 200)
  t.equal((await app.inject({ url: `/echo/${random}`, headers: { host: API_HOST } })).statusCode, 401, 'under a wildcard route, unsigned')
  t.equal((await app.inject({ url: `/nope-${random}`, headers: { host: API_HOST } })).statusCode, 404, 'no route')
  t.equal((await app.inject({ url: `/oauth2/${random}` })).statusCode, 404, 'no endpoint')

  const m = await scrape()
  const name = 'macgate_request_duration_seconds_count'
  t.equal(m.types.get('macgate_request_duration_seconds'), 'histogram')
  t.ok((m.value(name, { route: '/user/profile', method: 'GET', status_class: '2xx' }) ?? 0) >= 1, 'the configured route path')
  t.equal(m.value(name, { route: '/echo/*', method: 'GET', status_class: '4xx' }), 1, 'the wildcard route as configured')
  t.ok((m.value(name, { route: '/oauth2/token', method: 'GET', status_class: '2xx' }) ?? 0) >= 1, 'an endpoint by its own route')
  t.equal(m.value(name, { route: 'unmatched', method: 'GET', status_class: '4xx' }), 2, 'unrouted paths: unmatched')
  t.notOk(m.text.includes(random), 'no path as sent, no query, appears anywhere in the exposition')
  const routes = m.labelValues(name, 'route')
  t.notOk(routes.some((route) => route.includes('nope')), `route labels: ${routes.join(' ')}`)
})

t.test('on Redis: command latency by command, and an outage counted as store_unavailable', { skip: sharedRedis ? 'stops Redis: needs a redis-server of its own' : false }, async (t) => {
  const { app, store, redis } = await buildTestGateway(t, { store: 'redis' })
  const scrape = await scraper(t, app, store)
  const token = await liveToken(app)
  await awayFromMinuteEdge()
  t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })).statusCode, 200)
  let m = await scrape()
  const count = 'macgate_store_command_duration_seconds_count'
  t.ok((m.value(count, { command: 'macgateUseNonces', result: 'ok' }) ?? 0) > 0, 'the nonce script, timed')
  t.ok((m.value(count, { command: 'macgateRedeemCode', result: 'ok' }) ?? 0) > 0, 'the code redemption script, timed')
  t.equal(m.sum(count, { result: 'error' }), 0, 'no failed command yet')
  t.ok((m.value('macgate_store_command_duration_seconds_bucket', { command: 'macgateUseNonces', result: 'ok', le: '+Inf' }) ?? 0) > 0, 'with buckets')
  t.equal(m.value('macgate_nonces_held'), 1, 'the one nonce held, counted in Redis')
  t.ok((m.value('macgate_nonce_memory_bytes') ?? 0) > 0, 'its set\'s memory, as Redis tells it')

  // The revocation channel on Redis: a PUBLISH from the revoking script, heard by the subscriber.
  const other = await liveToken(app)
  const beforeRevoke = await scrape()
  await revoke(app, other, other.accessToken)
  t.ok(await eventually(async () => changes(beforeRevoke, await scrape(), 'macgate_revocations_received_total')[''] === 1, 2000, 20), 'a revocation heard over Redis pub/sub')

  const before = await scrape()
  await redis!.stop()
  const response = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })
  t.equal(response.statusCode, 503)
  m = await scrape()
  t.strictSame(verifications(before, m), { 'outcome=store_unavailable': 1 }, 'one store_unavailable')
  t.ok((m.value(count, { command: 'macgateUseNonces', result: 'error' }) ?? 0) >= 1, 'the failed nonce script, timed as an error')
  t.equal(m.value('macgate_token_cache_flushes_total'), 0, 'no flush while Redis is away')
  t.equal(m.value('macgate_nonces_held'), 1, 'the scrape still answers, the nonce gauge as it was')

  // Back: the revocation channel reconnects and the cache is dropped (revocations may have been missed).
  await redis!.start()
  const upAt = Date.now()
  t.ok(await eventually(async () => ((await scrape()).value('macgate_token_cache_flushes_total') ?? 0) >= 1, 10_000, 50), 'a cache flush counted after the reconnect')
  t.comment(`flush counted ${Date.now() - upAt} ms after Redis started`)
  t.equal((await scrape()).value('macgate_token_cache_entries'), 0, 'the cache is empty')
})

t.test('the two nonce gauges share one store reading per scrape', async (t) => {
  const metrics = new Metrics()
  let reads = 0
  metrics.watchNonces(async () => {
    reads++
    return { held: 7, bytes: 4096 }
  })
  const first = parseMetrics(await metrics.registry.metrics())
  t.equal(reads, 1, 'one reading for both gauges')
  t.equal(first.value('macgate_nonces_held'), 7)
  t.equal(first.value('macgate_nonce_memory_bytes'), 4096)
  await metrics.registry.metrics()
  t.equal(reads, 2, 'and a fresh one at the next scrape')
})
