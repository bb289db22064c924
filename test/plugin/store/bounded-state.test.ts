// State that could grow without bound stays bounded: the embedded nonce set has a ceiling and
// refuses (503) rather than skip the replay check when full; a client's grant list forgets grants
// whose records can no longer be live; a cached token holds itself, not the header it came in.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { mock } from 'node:test'
import t, { type Test } from 'tap'
import { buildGateway } from '../../../gateway/index.ts'
import { grantAccessToken, MemoryStore, RedisStore, type Store } from '../../../plugin/index.ts'
import { hashSecret, mintToken, newGrantId, randomBase64Url } from '../../../plugin/access/credentials.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { liveToken, signedInject } from '../../helpers/gateway.ts'
import { eventually } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'
import { issue, nonceUse, SECRET } from '../../helpers/store-suite.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** The JS heap and the typed arrays' memory outside it, after collecting garbage. */
function memoryAfterGc (): { heap: number, typedArrays: number } {
  gc()
  gc()
  const { heapUsed, arrayBuffers } = process.memoryUsage()
  return { heap: heapUsed, typedArrays: arrayBuffers }
}

/** Uses nonces `0:<minute>` … until the store refuses a few; how many it accepted and refused. */
async function flood (t: Test, store: MemoryStore, tokenHash: string, count: number): Promise<{ accepted: number, refused: number }> {
  let accepted = 0
  let refused = 0
  for (let i = 0; i < count; i++) {
    try {
      if (await store.useNonce(nonceUse(tokenHash, `${i}:${29_000_000}`, { ttlSeconds: 600, minute: 29_000_000 }))) accepted++
    } catch (error) {
      t.match(error, { errno: 96000, statusCode: 503, message: 'nonce store is full; try again shortly' })
      refused++
      if (refused > 3) break
    }
  }
  return { accepted, refused }
}

t.test('the embedded nonce set under a flood stays under its ceiling, then refuses', async (t) => {
  const ceiling = 200_000
  const tokenHash = hashSecret(mintToken(SECRET, newGrantId()))
  // A small flood first, on a store of its own, so that compiling the path (and its refusal) does
  // not count as the measured store's memory.
  const warm = new MemoryStore({ maxNonces: 20_000 })
  await flood(t, warm, tokenHash, 30_000)
  await warm.close()
  const store = new MemoryStore({ maxNonces: ceiling })
  t.teardown(async () => { await store.close() })
  const before = memoryAfterGc()
  const { accepted, refused } = await flood(t, store, tokenHash, ceiling * 1.5)
  const after = memoryAfterGc()
  const { bytes } = await store.nonceStats()
  t.equal(accepted, ceiling, 'every nonce up to the ceiling accepted')
  t.ok(refused > 0, 'past it, refused with 503 rather than accepted unchecked')
  const [tables, heap] = [after.typedArrays - before.typedArrays, after.heap - before.heap]
  t.comment(`${ceiling} live nonces: typed arrays grew ${(tables / ceiling).toFixed(1)} bytes a nonce (the store counts ${(bytes / ceiling).toFixed(1)}), the JS heap ${(heap / ceiling).toFixed(1)}`)
  t.ok(tables <= ceiling * 21, `the tables (typed arrays) grew ${tables} bytes, at most 21 a nonce`)
  // The JS heap's reading moves by about 1.5 MB either way with the machine's load (its own
  // compiled code and metadata); an object kept per nonce would take at least 16 bytes each.
  t.ok(heap < ceiling * 16, `the JS heap grew ${heap} bytes, less than one small object a nonce (16 bytes)`)
})

t.test('a gateway on a full embedded nonce set answers 503 96000 past the ceiling', async (t) => {
  const store = new MemoryStore({ maxNonces: 20 })
  const app = await buildGateway({ store })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  const token = await liveToken(app)
  const statuses: number[] = []
  for (let i = 0; i < 25; i++) statuses.push((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })).statusCode)
  t.same(statuses.slice(0, 20), Array(20).fill(200))
  t.same(statuses.slice(20), Array(5).fill(503))
  const full = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })
  t.same(full.json(), { result: 'error', description: 'nonce store is full; try again shortly', code: 96000 })
})

t.test('the token cache holds each token, not the Authorization header it came in', async (t) => {
  const store = new MemoryStore()
  const app = await buildGateway({ store })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  const { clientId, userId } = await liveToken(app)
  const tokens = async (count: number): Promise<Array<{ accessToken: string, macKey: string }>> =>
    await Promise.all(Array.from({ length: count }, async () => await grantAccessToken(app.macgate, { clientId, userId, scope: ['1'] })))
  // A header the parser takes (whitespace between parameters is allowed), near its 4,096 characters.
  const padded = ({ token, nonce, mac }: { token: string, nonce: string, mac: string }): string => `MAC access_token="${token}",${' '.repeat(3800)}nonce="${nonce}", mac="${mac}"`
  const presentAll = async (issued: Array<{ accessToken: string, macKey: string }>): Promise<void> => {
    for (const { accessToken, macKey } of issued) {
      const answer = await signedInject(app, { url: '/user/profile', token: accessToken, macKey, authorization: padded })
      if (answer.statusCode !== 200) t.fail(`a padded header's request answered ${answer.statusCode}: ${answer.body}`)
    }
  }
  // The path compiled first, with tokens of their own, so that its code is not counted.
  await presentAll(await tokens(200))
  const count = 2000
  const measured = await tokens(count)
  const before = memoryAfterGc()
  await presentAll(measured)
  const after = memoryAfterGc()
  const entries = /^macgate_token_cache_entries (\d+)$/m.exec(await app.macgate.metrics.registry.metrics())?.[1]
  t.equal(Number(entries), 200 + count, 'every token presented is cached')
  const perToken = (after.heap - before.heap) / count
  t.comment(`${count} tokens cached from 3,900-character headers: the JS heap grew ${perToken.toFixed(0)} bytes a token`)
  // What the gateway keeps for a token it has seen comes to about 1,350 bytes here (its cache
  // entry, its nonce, the tables' growth), about 5,250 when an entry kept its header; the reading
  // moved by less than 30 bytes a token from run to run.
  t.ok(perToken < 2500, `the JS heap grew ${perToken.toFixed(0)} bytes a cached token, less than 2,500`)
})

t.test('Redis: a client\'s grant list drops grants past their time, and expires with its last one', async (t) => {
  const redis = await startRedis(t)
  // The pruning compares with the store's clock, stepped; the key's own expiry is Redis's
  // (PEXPIREAT, on Redis's real clock), waited for by watching the key.
  const clock = steppedClock()
  const store = await new RedisStore(redis.url, { prefix: redis.prefix, clock: clock.now }).connect()
  t.teardown(async () => { await store.close() })
  const key = `${redis.prefix}{c:1000000000000000001}:grants`
  const [short, long] = [newGrantId(), newGrantId()]
  await store.trackGrant('1000000000000000001', short, clock.now() + 300, 'user-1')
  await store.trackGrant('1000000000000000001', long, clock.now() + 3_600_000, 'user-1')
  await store.trackGrant('1000000000000000001', long, clock.now() + 1000, 'user-1')
  t.ok(Number(await store.redis.zscore(key, long)) > clock.now() + 3_000_000, 'a later call never shortens a grant')
  clock.step(400)
  await store.trackGrant('1000000000000000001', newGrantId(), clock.now() + 600, 'user-1')
  t.notOk((await store.redis.zrange(key, '0', '-1')).includes(short), 'the expired grant was pruned')
  const other = `${redis.prefix}{c:1000000000000000002}:grants`
  await store.trackGrant('1000000000000000002', newGrantId(), Date.now() + 100, 'user-1')
  t.ok(await eventually(async () => await store.redis.exists(other) === 0, 3000, 20), 'the list is gone with its last grant')
})

t.test('embedded store: a client\'s grant list forgets grants past their time', async (t) => {
  // In-process state: the store's clock is stepped, and its sweep timer with Node's mock timers.
  const clock = steppedClock()
  mock.timers.enable({ apis: ['setInterval'] })
  t.teardown(() => { mock.timers.reset() })
  const store: Store = new MemoryStore({ sweepIntervalMs: 50, clock: clock.now })
  t.teardown(async () => { await store.close() })
  const clientId = '1000000000000000003'
  await store.saveClient({ id: clientId, name: 'a', secretHash: hashSecret(randomBase64Url(8)), redirectUris: ['https://a.example/cb'], scopes: ['1'], responseTypes: ['code'], grantTypes: ['authorization_code', 'refresh_token'], requirePkce: false, createdAt: Date.now() })
  const [forgotten, kept] = [issue(newGrantId(), { clientId }), issue(newGrantId(), { clientId })]
  await store.trackGrant(clientId, forgotten.grantId, Date.now() + 100, 'user-1')
  await store.trackGrant(clientId, kept.grantId, Date.now() + 3_600_000, 'user-1')
  for (const issued of [forgotten, kept]) await store.saveTokens(issued.set)
  clock.step(300)
  mock.timers.tick(300)
  await store.removeClient(clientId)
  t.equal(await store.getAccessToken(kept.accessHash, kept.grantId), undefined, 'a tracked grant is revoked with its client')
  t.ok(await store.getAccessToken(forgotten.accessHash, forgotten.grantId), 'a grant past its time was no longer listed')
})

t.test('embedded store: past 100 000 sessions the oldest goes first, a flood cannot grow it', async (t) => {
  const store: Store = new MemoryStore()
  t.teardown(async () => { await store.close() })
  const session = { userId: 'user-1', username: 'alice', expiresAt: Date.now() + 3_600_000 }
  for (let i = 0; i < 100_000; i++) await store.saveSession(`s${i}`, session)
  await store.saveSession('s0', session)
  t.ok(await store.getSession('s0', 'user-1'), 'at the ceiling, saving a kept session again pushes nothing out')
  await store.saveSession('newest', session)
  t.equal(await store.getSession('s0', 'user-1'), undefined, 'one more: the oldest is gone')
  t.ok(await store.getSession('s1', 'user-1'), 'the next oldest is kept')
  t.ok(await store.getSession('newest', 'user-1'), 'and the newest is there')
})
