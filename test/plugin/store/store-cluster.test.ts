import { setTimeout as sleep } from 'node:timers/promises'
import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { Cluster } from 'ioredis'
import { RedisStore } from '../../../plugin/store/redis/redis-store.ts'
import { newGrantId } from '../../../plugin/access/credentials.ts'
import { startRedisCluster } from '../../helpers/redis-cluster.ts'
import { Heard, issue, newClient, nonceUse, storeSuite } from '../../helpers/store-suite.ts'
import { eventually } from '../../helpers/live.ts'

// The store suite on a real Redis Cluster (3 masters, 3 replicas), then what only a cluster has:
// nonce batches over many slots, revocations published on one node heard through another, and the
// subscriber following the cluster when its node dies.

const cluster = await startRedisCluster(t)
const clusterNodes = cluster.seeds.split(',')
const prefix = `test:${randomBytes(6).toString('hex')}:`

let stores = 0
async function open (t: Test, storePrefix = `${prefix}${++stores}:`): Promise<RedisStore> {
  const store = await new RedisStore({ clusterNodes }, { prefix: storePrefix }).connect()
  t.teardown(() => store.close())
  return store
}

// Time passes for Redis's own TTLs: a real sleep.
storeSuite(t, async (t) => ({ store: await open(t), pass: sleep }))

t.test('a seed list names host:port pairs', async (t) => {
  t.throws(() => new RedisStore({ clusterNodes: ['127.0.0.1'] }), { message: 'a cluster node is host:port, not "127.0.0.1"' })
  t.throws(() => new RedisStore({ clusterNodes: ['127.0.0.1:70000'] }), RangeError)
  // One reachable seed is enough: the client learns the rest from it.
  const store = await new RedisStore({ clusterNodes: ['127.0.0.1:1', `localhost:${clusterNodes[0]!.split(':')[1]}`] }, { prefix: `${prefix}seeds:` }).connect()
  t.teardown(() => store.close())
  const { record } = newClient()
  await store.saveClient(record)
  t.strictSame(await store.getClient(record.id), record)
  t.ok((store.redis as Cluster).nodes('master').length === 3, 'the client found the three masters')
})

t.test('one turn of nonces spread over every nonce slot: each answered, replays refused', async (t) => {
  const store = await open(t)
  // 64 tokens cover the 16 nonce slots several times over; all checked in one event-loop turn.
  const tokens = Array.from({ length: 64 }, () => randomBytes(32).toString('base64url'))
  const first = await Promise.all(tokens.map(async (token) => await store.useNonce(nonceUse(token, '1:a'))))
  t.ok(first.every(Boolean), 'every first use is fresh')
  const again = await Promise.all(tokens.map(async (token, i) => await store.useNonce(nonceUse(token, i % 2 === 0 ? '1:a' : '2:b'))))
  t.strictSame(again, tokens.map((_, i) => i % 2 !== 0), 'the replays, and only they, are refused')
})

t.test('a revocation written on one master is heard by stores subscribed on other nodes', async (t) => {
  const shared = `${prefix}shared:`
  const writer = await open(t, shared)
  const listeners = await Promise.all([open(t, shared), open(t, shared), open(t, shared)])
  const heard = listeners.map((store) => new Heard(store))
  for (const one of heard) t.ok(await one.ready(writer), 'listener live')
  // Grants in many slots, so revocations come from every master.
  const grants = Array.from({ length: 12 }, () => issue(newGrantId(), { refresh: false }))
  for (const grant of grants) await writer.saveTokens(grant.set)
  const started = Date.now()
  for (const grant of grants) await writer.revokeGrant(grant.grantId)
  for (const one of heard) {
    for (const grant of grants) t.ok(await one.waitFor(grant.accessHash, 1000), 'heard')
  }
  t.ok(Date.now() - started < 1000, `every listener heard every revocation within ${Date.now() - started} ms`)
})

t.test('listing clients works across the cluster', async (t) => {
  const store = await open(t)
  const clients = Array.from({ length: 20 }, () => newClient().record)
  for (const client of clients) await store.saveClient(client)
  t.equal((await store.listClients()).length, 20)
})

// Last: it kills a master.
t.test('the subscriber follows the cluster when its node dies, and says revocations may have been missed', async (t) => {
  const shared = `${prefix}failover:`
  const writer = await open(t, shared)
  const listener = await open(t, shared)
  const heard = new Heard(listener)
  t.ok(await heard.ready(writer), 'listener live')
  // The listener's node is one of the six; kill a master, which it may or may not be on.
  // Find the subscriber's node from the server side: the connection subscribed to the channel.
  let subscriberNode
  for (const node of cluster.nodes) {
    const { Redis } = await import('ioredis')
    const probe = new Redis(node.port, '127.0.0.1')
    const counts = await probe.call('PUBSUB', 'NUMSUB', `${shared}revoked`) as [string, number]
    await probe.quit()
    if (counts[1] > 0) subscriberNode = node
  }
  t.ok(subscriberNode !== undefined, 'found the subscribed node')
  await cluster.kill(subscriberNode!)
  await cluster.settled()
  await eventually(async () => heard.resets > 0, 10_000, 50)
  t.equal(heard.resets, 1, 'after resubscribing elsewhere, listeners are told to drop everything')
  t.ok(await heard.ready(writer, 10_000), 'and revocations reach them again')
})
