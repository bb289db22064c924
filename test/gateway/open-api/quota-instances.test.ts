// Two gateway instances counting one quota, over real HTTP: on one Redis (the counts in the nonce
// batch's script) and on a Redis Cluster (the turn's counters in one call of their own). The stated
// bound (README, "Quotas"): not one request over the limit in a window, whatever the instances.
import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { buildGateway } from '../../../gateway/index.ts'
import { RedisStore, type RedisTarget } from '../../../plugin/index.ts'
import { addClient } from '../../helpers/app.ts'
import { issueTokens, signedGet, type LiveGateway } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'
import { startRedisCluster } from '../../helpers/redis-cluster.ts'

const LIMIT = 20
const routes = [{ path: '/user/profile', methods: ['GET'], scopes: ['1'], match: 'all' as const, quota: { perMinute: LIMIT } }]
// One window for the whole burst, whatever the real clock does meanwhile (the nonces, signed by the
// real clock, stay within the skew of it).
const start = Math.floor(Date.now() / 60_000) * 60_000 + 1_000
const clock = (): number => start

async function instance (t: Test, target: RedisTarget, prefix: string, secret: string): Promise<LiveGateway> {
  const store = await new RedisStore(target, { prefix }).connect()
  const app = await buildGateway({ store, secret, config: { routes }, clock })
  const origin = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  return { app, store, origin }
}

/** 3 × LIMIT signed requests at once, alternating instances and the client's four tokens. */
async function burst (t: Test, target: RedisTarget): Promise<void> {
  const prefix = `test:${randomBytes(6).toString('hex')}:`
  const secret = randomBytes(32).toString('base64url')
  const a = await instance(t, target, prefix, secret)
  const b = await instance(t, target, prefix, secret)
  const { clientId, clientSecret } = await addClient(a.store)
  const tokens = await Promise.all([a, b, a, b].map(async (gateway) => (await issueTokens(gateway, clientId, clientSecret)).tokens))
  const answers = await Promise.all(Array.from({ length: 3 * LIMIT }, async (_, i) => await signedGet((i % 2 === 0 ? a : b).origin, '/user/profile', tokens[i % 4]!)))
  const statuses = answers.map(({ status }) => status)
  t.equal(statuses.filter((status) => status === 200).length, LIMIT, `exactly ${LIMIT} admitted over both instances`)
  t.equal(statuses.filter((status) => status === 429).length, 2 * LIMIT, 'the rest refused with 429')

  // A replay is refused and not counted (on a cluster: counted first, then given back).
  const other = await addClient(a.store)
  const token = (await issueTokens(a, other.clientId, other.clientSecret)).tokens
  const first = await signedGet(a.origin, '/user/profile', token)
  t.equal(first.status, 200)
  t.equal((await signedGet(b.origin, '/user/profile', token, first.authorization)).status, 401, 'the replay on the other instance is refused')
  t.same(await a.store.quotaUsed([`${other.clientId}:/user/profile`], Math.floor(clock() / 60_000)), [1], 'and not counted')
}

t.test('two instances on one Redis stay within the limit', async (t) => {
  const redis = await startRedis(t)
  await burst(t, redis.url)
})

t.test('two instances on a Redis Cluster stay within the limit', async (t) => {
  const cluster = await startRedisCluster(t)
  await burst(t, { clusterNodes: cluster.seeds.split(',') })
})

t.test('a Redis Cluster gone: the turn\'s counters call fails as an outage, 503 96000', async (t) => {
  const cluster = await startRedisCluster(t)
  const gateway = await instance(t, { clusterNodes: cluster.seeds.split(',') }, `test:${randomBytes(6).toString('hex')}:`, randomBytes(32).toString('base64url'))
  const { clientId, clientSecret } = await addClient(gateway.store)
  const token = (await issueTokens(gateway, clientId, clientSecret)).tokens
  // The token is cached by its first request: the outage meets the counters' call, not the token's read.
  t.equal((await signedGet(gateway.origin, '/user/profile', token)).status, 200)
  for (const node of cluster.nodes) await cluster.kill(node)
  const down = await signedGet(gateway.origin, '/user/profile', token)
  t.equal(down.status, 503)
  t.match(down.body, { result: 'error', code: 96000 })
})
