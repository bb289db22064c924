// Quotas per client and route, through HTTP (inject) on both stores: the counts, the 429 and its
// fields, the window opening on an injected clock, a client's own limit, 0, the unspent nonce of a
// refused request, and what an operator sees (metric, audit event, `clients show`'s counts).
import { createServer } from 'node:http'
import { Redis } from 'ioredis'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { grantAccessToken, updateClient } from '../../../plugin/index.ts'
import { CLIENT_LIMIT_MAX_AGE_MS } from '../../../plugin/mac/client-limits.ts'
import { MAX_LABELLED_CLIENTS } from '../../../plugin/mac/quota-refusals.ts'
import { addClient, buildTestApp } from '../../helpers/app.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { startRedis } from '../../helpers/redis.ts'
import { liveToken, nonceAt, signedInject, type LiveTokens } from '../../helpers/gateway.ts'
import { quotaUses } from '../../../gateway/commands/client-show.ts'
import { ConfigError, parseConfig, type RouteRule } from '../../../gateway/config/gateway-config.ts'

/** An upstream that counts what reaches it. */
async function countingUpstream (t: Test): Promise<{ url: string, hits: () => number }> {
  let hits = 0
  const server = createServer((_request, response) => {
    hits++
    response.setHeader('content-type', 'application/json')
    response.end('{"result":"ok"}')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits }
}

const routes: RouteRule[] = [
  { path: '/limited/*', methods: ['GET'], scopes: [], match: 'all', quota: { perMinute: 3 } },
  { path: '/other/*', methods: ['GET'], scopes: [], match: 'all', quota: { perMinute: 3 } },
  { path: '/free/*', methods: ['GET'], scopes: [], match: 'all' }
]

for (const store of ['memory', 'redis'] as const) {
  t.test(`quotas on the ${store} store`, async (t) => {
    const upstream = await countingUpstream(t)
    // 10 s into this minute's window. The verifier reads this one clock for the nonce's freshness
    // too: the nonces, signed by the real clock, stay within the skew of it.
    const clock = steppedClock(Math.floor(Date.now() / 60_000) * 60_000 + 10_000)
    const { app, store: backing } = await buildTestApp(t, { store, upstream: upstream.url, routes, clock: clock.now })
    const call = async (tokens: LiveTokens, path: string, nonce?: string) => await signedInject(app, { url: path, token: tokens.accessToken, macKey: tokens.macKey, ...(nonce !== undefined && { nonce }) })
    const refusals: unknown[] = []
    app.macgate.events.on('quota.exceeded', (event) => refusals.push(event))

    const tokens = await liveToken(app)
    for (const left of [2, 1, 0]) {
      const answer = await call(tokens, '/limited/a')
      t.equal(answer.statusCode, 200, 'under the limit: passes')
      t.equal(answer.headers['ratelimit-policy'], '"per-minute";q=3;w=60')
      t.equal(answer.headers.ratelimit, `"per-minute";r=${left};t=50`)
    }
    t.equal(upstream.hits(), 3)

    const nonce = nonceAt()
    const over = await call(tokens, '/limited/b', nonce)
    t.equal(over.statusCode, 429)
    t.same(over.json(), { result: 'error', description: 'quota of 3 requests a minute used up; retry in 50 s', code: 96014 })
    t.equal(over.headers['retry-after'], '50')
    t.equal(over.headers['ratelimit-policy'], '"per-minute";q=3;w=60')
    t.equal(over.headers.ratelimit, '"per-minute";r=0;t=50')
    t.equal(upstream.hits(), 3, 'a refused request never reaches the upstream')
    t.equal((await call(tokens, '/limited/c')).statusCode, 429, 'still over')
    t.same(refusals.length, 1, 'one audit event for the window')
    t.match(refusals[0], { type: 'quota.exceeded', clientId: tokens.clientId, route: '/limited/*', limit: 3 })
    const metrics = await app.macgate.metrics.registry.getSingleMetricAsString('macgate_quota_rejections_total')
    t.match(metrics, `macgate_quota_rejections_total{client="${tokens.clientId}"} 2`)

    t.same(await quotaUses(backing, (await backing.getClient(tokens.clientId))!, routes, clock.now()),
      [{ route: '/limited/*', perMinute: 3, from: 'route', used: 3 }, { route: '/other/*', perMinute: 3, from: 'route', used: 0 }], 'clients show counts the window')

    const other = await call(tokens, '/other/a')
    t.equal(other.statusCode, 200, 'each route counts its own requests')
    const free = await call(tokens, '/free/a')
    t.equal(free.statusCode, 200)
    t.equal(free.headers['ratelimit-policy'], undefined, 'a route without a quota has no fields')

    const forged = await signedInject(app, { url: '/limited/d', token: tokens.accessToken, macKey: 'wrong' })
    t.equal(forged.statusCode, 401)
    t.equal(forged.headers['ratelimit-policy'], '"per-minute";q=3;w=60', 'every answer of a limited route has the policy')
    t.equal(forged.headers.ratelimit, undefined, 'no count for a caller not proven')

    clock.step(50_000)
    const retried = await call(tokens, '/limited/b', nonce)
    t.equal(retried.statusCode, 200, 'the next window opens on time, and the refused nonce was not spent')
    t.equal(retried.headers.ratelimit, '"per-minute";r=2;t=60')
    const replayed = await call(tokens, '/limited/b', nonce)
    t.equal(replayed.statusCode, 401, 'the nonce is spent once admitted')
    t.equal(replayed.headers.ratelimit, '"per-minute";r=2;t=60', 'a replay is not counted')

    const generous = await liveToken(app)
    await updateClient(backing, generous.clientId, { quotaPerMinute: 5 })
    for (let i = 0; i < 5; i++) t.equal((await call(generous, '/limited/a')).statusCode, 200, 'its own limit beats the route default')
    const sixth = await call(generous, '/limited/a')
    t.equal(sixth.statusCode, 429)
    t.equal(sixth.headers['ratelimit-policy'], '"per-minute";q=5;w=60')

    // The limit read is held CLIENT_LIMIT_MAX_AGE_MS by the verifier's clock, then read again.
    await updateClient(backing, generous.clientId, { quotaPerMinute: 8 })
    clock.step(CLIENT_LIMIT_MAX_AGE_MS - 1)
    t.equal((await call(generous, '/limited/a')).headers['ratelimit-policy'], '"per-minute";q=5;w=60', 'the held limit, until it is 10 s old')
    clock.step(1)
    const raised = await call(generous, '/limited/a')
    t.equal(raised.statusCode, 200, 'the raised limit, read again at 10 s')
    t.equal(raised.headers['ratelimit-policy'], '"per-minute";q=8;w=60')

    const blocked = await liveToken(app)
    await updateClient(backing, blocked.clientId, { quotaPerMinute: 0 })
    const zero = await call(blocked, '/limited/a')
    t.equal(zero.statusCode, 429, '0 blocks')
    t.equal(zero.json().code, 96014)
    t.equal((await call(blocked, '/free/a')).statusCode, 200, 'only on routes with a quota')
  })
}

t.test('Redis stopped: a limited route answers 503 96000 with its policy; clients show\'s count fails as an outage', async (t) => {
  const redis = await startRedis(t)
  const upstream = await countingUpstream(t)
  const { app, store } = await buildTestApp(t, { store: 'redis', redis, upstream: upstream.url, routes })
  const tokens = await liveToken(app)
  // The token is cached: the outage meets the counted nonce, not the token's read.
  t.equal((await signedInject(app, { url: '/limited/a', token: tokens.accessToken, macKey: tokens.macKey })).statusCode, 200)
  // Another client's token, cached by a free route: its first limited call reads its client's limit.
  const unread = await liveToken(app)
  t.equal((await signedInject(app, { url: '/free/a', token: unread.accessToken, macKey: unread.macKey })).statusCode, 200)
  await redis.stop()
  const down = await signedInject(app, { url: '/limited/a', token: tokens.accessToken, macKey: tokens.macKey })
  t.equal(down.statusCode, 503)
  t.equal(down.json().code, 96000)
  t.equal(down.headers['ratelimit-policy'], '"per-minute";q=3;w=60')
  const limitUnread = await signedInject(app, { url: '/limited/a', token: unread.accessToken, macKey: unread.macKey })
  t.equal(limitUnread.statusCode, 503, 'the client\'s limit cannot be read: an outage too')
  t.equal(limitUnread.json().code, 96000)
  await t.rejects(store.quotaUsed([`${tokens.clientId}:/limited/*`], 0), { code: 'OA_SERVICE_UNAVAILABLE' })
  t.same(await store.quotaUsed([], 0), [], 'nothing asked, nothing sent')
})

t.test('the rejections metric names at most 100 clients; the rest are "other"', async (t) => {
  const upstream = await countingUpstream(t)
  const { app } = await buildTestApp(t, { upstream: upstream.url, routes: [{ path: '/limited/*', methods: ['GET'], scopes: [], match: 'all', quota: { perMinute: 0 } }] })
  const clients: string[] = []
  for (let i = 0; i <= MAX_LABELLED_CLIENTS; i++) {
    const { clientId } = await addClient(app.macgate.store)
    const { accessToken, macKey } = await grantAccessToken(app.macgate, { clientId, userId: 'u', scope: ['1'] })
    t.equal((await signedInject(app, { url: '/limited/a', token: accessToken, macKey })).statusCode, 429)
    clients.push(clientId)
  }
  const text = await app.macgate.metrics.registry.getSingleMetricAsString('macgate_quota_rejections_total')
  t.match(text, `macgate_quota_rejections_total{client="${clients[0]!}"} 1`)
  t.match(text, 'macgate_quota_rejections_total{client="other"} 1')
  t.notMatch(text, clients[MAX_LABELLED_CLIENTS]!)
})

t.test('the config: a route\'s quota is perMinute, a whole number from 0', async (t) => {
  const route = (quota: unknown): unknown => ({ routes: [{ path: '/a/*', quota }] })
  t.same(parseConfig(route({ perMinute: 600 })).routes[0]!.quota, { perMinute: 600 })
  t.same(parseConfig(route({ perMinute: 0 })).routes[0]!.quota, { perMinute: 0 }, '0 blocks')
  t.throws(() => parseConfig(route({ perMinute: -1 })), ConfigError)
  t.throws(() => parseConfig(route({ perMinute: 1.5 })), ConfigError)
  t.throws(() => parseConfig(route({})), /perMinute/)
  t.throws(() => parseConfig(route({ perMinute: 5, perDay: 9 })), ConfigError, 'no other window')
})

t.test('one Redis: a limited route makes as many script calls a request as an unlimited one', async (t) => {
  const redis = await startRedis(t)
  const upstream = await countingUpstream(t)
  const { app } = await buildTestApp(t, { store: 'redis', redis, upstream: upstream.url, routes: [{ ...routes[0]!, quota: { perMinute: 1000 } }, routes[2]!] })
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  const scriptCalls = async (): Promise<number> => {
    const stats = await client.info('commandstats')
    return [...stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((total, [, calls]) => total + Number(calls), 0)
  }
  const tokens = await liveToken(app)
  // Warm: the token in the LRU, the client's own limit read (once per 10 s, not per request).
  for (const path of ['/limited/a', '/free/a']) t.equal((await signedInject(app, { url: path, token: tokens.accessToken, macKey: tokens.macKey })).statusCode, 200)
  const perRoute: Record<string, number> = {}
  for (const path of ['/limited/a', '/free/a']) {
    const before = await scriptCalls()
    for (let i = 0; i < 10; i++) t.equal((await signedInject(app, { url: path, token: tokens.accessToken, macKey: tokens.macKey })).statusCode, 200)
    perRoute[path] = (await scriptCalls()) - before
  }
  t.same(perRoute, { '/limited/a': 10, '/free/a': 10 }, 'one script call a request on both')
})
