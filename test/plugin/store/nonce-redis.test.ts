// The Redis store's replay memory: minute buckets (sets of 8-byte keyed hashes), what a held nonce
// costs in used_memory, and what a turn's batch answers each request.
import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { RedisStore } from '../../../plugin/store/redis/redis-store.ts'
import { startRedis } from '../../helpers/redis.ts'
import { nonceUse } from '../../helpers/store-suite.ts'
import type { NonceUse } from '../../../plugin/store/store.ts'

const redis = await startRedis(t)
let stores = 0

async function open (t: Test, prefix = `${redis.prefix}${++stores}:`): Promise<RedisStore> {
  const store = await new RedisStore(redis.url, { prefix }).connect()
  t.teardown(() => store.close())
  return store
}

const tokenHash = (): string => randomBytes(32).toString('hex')

t.test('sets per (tag, minute), of integers, expiring once with their minute; no key per nonce', async (t) => {
  const store = await open(t)
  const minute = Math.floor(Date.now() / 60_000)
  const uses = Array.from({ length: 40 }, () => nonceUse(tokenHash(), `1:${minute}`, { minute, ttlSeconds: 300 }))
  t.same(await Promise.all(uses.map(async (use) => await store.useNonce(use))), uses.map(() => true))
  const keys = (await store.redis.keys(`${store.prefix}{n:*`)).sort()
  // The key's bytes as Node reads them from a Buffer of the same bytes: an independent reading of nonce-key.ts's.
  const bytes = (use: NonceUse): Buffer => Buffer.from(use.key, 'latin1')
  const setOf = (use: NonceUse): string => `${store.prefix}{n:${(bytes(use)[9]! & 15).toString(16)}}:${minute}:${bytes(use)[8]!.toString(16)}`
  t.same(keys, [...new Set(uses.map(setOf))].sort(), 'one set per (tag and set by the keyed hash\'s 10th and 9th bytes, minute)')
  for (const key of keys) {
    t.equal(await store.redis.object('ENCODING', key), 'intset', `${key} is an intset`)
    const ttl = await store.redis.ttl(key)
    t.ok(ttl > 290 && ttl <= 300, `${key} expires with its minute (${ttl} s)`)
  }
  t.ok(await store.redis.sismember(setOf(uses[0]!), bytes(uses[0]!).readBigInt64LE(0).toString()), 'a member is the keyed hash\'s first 8 bytes as a signed integer')
  const sameSet = (ttlSeconds: number): NonceUse => ({ ...uses[0]!, ttlSeconds, key: randomBytes(8).toString('latin1') + uses[0]!.key.slice(8) })
  await store.useNonce(sameSet(100))
  t.ok(await store.redis.ttl(setOf(uses[0]!)) > 290, 'a shorter lifetime does not shorten the set\'s')
  await store.useNonce(sameSet(900))
  t.ok(await store.redis.ttl(setOf(uses[0]!)) > 890, 'a longer one (a verifier with a wider skew) lengthens it')
  t.equal((await store.nonceStats()).held, 42, 'the stats count every set of the minute')
  await store.useNonce(nonceUse(tokenHash(), '1:1', { minute: minute - 100, ttlSeconds: 1 }))
  t.equal((await store.nonceStats()).held, 42, 'a minute long out of the window is no longer counted')
})

t.test('nonces of many minutes, in one turn and turn after turn: each in its minute\'s set, a replay found in any', async (t) => {
  const store = await open(t)
  const now = Math.floor(Date.now() / 60_000)
  // Eight minutes, more than the set names kept (three), met out of order.
  const minutes = [0, 5, 1, 7, 2, 6, 3, 4].map((back) => now - back)
  const uses = minutes.flatMap((minute) => Array.from({ length: 6 }, (_, i) => nonceUse(tokenHash(), `${i}:${minute}`, { minute, ttlSeconds: 900 })))
  t.same(await Promise.all(uses.map(async (use) => await store.useNonce(use))), uses.map(() => true), 'one turn: all first uses')
  const replays: boolean[] = []
  for (const use of [...uses].reverse()) replays.push(await store.useNonce(use))
  t.same(replays, uses.map(() => false), 'turn after turn, each minute named again: all replays')
  const keys = await store.redis.keys(`${store.prefix}{n:*`)
  const setMinutes = new Set(keys.map((key) => Number(key.split(':').at(-2))))
  t.same([...setMinutes].sort(), [...new Set(minutes)].sort(), 'a set of each minute, named by its own minute')
  t.equal(keys.length, new Set(keys).size)
})

t.test('one token\'s nonces spread over every tag (a cluster shares even one busy token)', async (t) => {
  const store = await open(t)
  const hash = tokenHash()
  await Promise.all(Array.from({ length: 400 }, async (_, i) => await store.useNonce(nonceUse(hash, `${i}:1`))))
  const tags = new Set((await store.redis.keys(`${store.prefix}{n:*`)).map((key) => key.slice(store.prefix.length, store.prefix.length + 5)))
  t.equal(tags.size, 16, 'all 16 tags')
})

t.test('used_memory per held nonce: 200,000 nonces in one minute', async (t) => {
  const own = await startRedis(t)
  const store = await new RedisStore(own.url, { prefix: own.prefix }).connect()
  t.teardown(() => store.close())
  const usedMemory = async (): Promise<number> => Number(/used_memory:(\d+)/.exec(await store.redis.info('memory'))![1])
  const count = 200_000
  const minute = Math.floor(Date.now() / 60_000)
  const before = await usedMemory()
  for (let sent = 0; sent < count; sent += 2000) {
    // One turn's worth at a time, as the gateway batches them.
    const fresh = await Promise.all(Array.from({ length: 2000 }, async () => await store.useNonce(nonceUse(tokenHash(), `${sent}:${minute}`, { minute, ttlSeconds: 600 }))))
    if (!fresh.every(Boolean)) t.fail('a fresh nonce refused')
  }
  const grown = await usedMemory() - before
  const stats = await store.nonceStats()
  t.comment(`${count} nonces: used_memory grew ${(grown / 2 ** 20).toFixed(1)} MiB, ${(grown / count).toFixed(1)} bytes each; MEMORY USAGE says ${(stats.bytes / count).toFixed(1)}`)
  t.ok(grown / count <= 64, `${(grown / count).toFixed(1)} bytes of used_memory a nonce, at most 64`)
  t.equal(stats.held, count, 'the stats count them')
  t.ok(Math.abs(stats.bytes - grown) < grown * 0.25, 'the bytes estimate within a quarter of the growth')
})

t.test('a Redis that has forgotten the script (SCRIPT FLUSH, as after a restart) still answers every nonce', async (t) => {
  const store = await open(t)
  const hash = tokenHash()
  t.equal(await store.useNonce(nonceUse(hash, '1:1')), true, 'before: fresh')
  await store.redis.script('FLUSH')
  t.same(await Promise.all([store.useNonce(nonceUse(hash, '1:1')), store.useNonce(nonceUse(hash, '2:1'))]), [false, true], 'the turn after the flush: the replay found, the fresh one kept')
  t.same(await Promise.all([store.useNonce(nonceUse(hash, '2:1')), store.useNonce(nonceUse(hash, '3:1'))]), [false, true], 'and the turn after that')
})

t.test('a key prefix beyond ASCII: each key written by its UTF-8 length', async (t) => {
  const store = await open(t, `mäcgate-✓${++stores}:`)
  const hash = tokenHash()
  t.same(await Promise.all([store.useNonce(nonceUse(hash, '1:1')), store.useNonce(nonceUse(hash, '1:1'))]), [true, false], 'a replay in the same turn found')
  const keys = await store.redis.keys(`${store.prefix}{n:*`)
  t.ok(keys.length > 0 && keys.every((key) => key.startsWith(store.prefix)), 'the sets are under the prefix as given')
})
