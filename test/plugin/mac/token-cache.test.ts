// The verifier's token cache on its miss path: concurrent misses share one store read, a revocation
// (or a gap in the revocation feed) during a read keeps its answer out of the cache and reads again,
// a failed read is given to every waiter and leaves nothing behind, the reads in flight are bounded.
// Against a real Redis (the turn's reads as one MGET, an outage), and against a store of the two
// methods the cache takes whose reads settle when the test says, for the races.
import { Redis } from 'ioredis'
import t from 'tap'
import { errors } from '../../../plugin/http/errors.ts'
import { Pending } from '../../../plugin/store/pending.ts'
import { hashSecret, mintMacKey, mintToken, newGrantId, randomBase64Url, sealMacKey } from '../../../plugin/access/credentials.ts'
import { TokenCache, type ActiveToken } from '../../../plugin/mac/token-cache.ts'
import { computeMac } from '../../../plugin/mac/signature.ts'
import { RedisStore } from '../../../plugin/index.ts'
import type { AccessTokenRecord, RevocationListener, TokenLookup } from '../../../plugin/store/store.ts'
import { callsSince, commandCalls } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'

const SECRET = 'the token cache test\'s server secret'
const OPTIONS = { max: 100, maxAgeMs: 60_000, negativeTtlMs: 10_000 }

function issue (expiresAt = Date.now() + 3_600_000): { token: string, macKey: string, hash: string, grantId: string, record: AccessTokenRecord } {
  const grantId = newGrantId()
  const token = mintToken(SECRET, grantId)
  const macKey = mintMacKey()
  const record = { grantId, clientId: 'client-1', userId: 'user-1', openId: 'open-1', scope: ['1'], macKeySealed: sealMacKey(token, macKey), expiresAt }
  return { token, macKey, hash: hashSecret(token), grantId, record }
}

/** Which mac_key an entry signs with (it keeps no text of it): its mac of a probe, as a client's under `macKey`. */
function keyOf (active: unknown): string | undefined {
  return (active as ActiveToken | undefined)?.signingKey.digest('probe', 'base64')
}
function signedUnder (macKey: string): string {
  return computeMac(macKey, 'probe')
}

/** What a lookup came to, waited on at once (as the verifier does: a Pending's rejection nobody waits for is thrown). */
function outcome (lookup: unknown): Promise<unknown> {
  return new Promise((resolve) => { (lookup as PromiseLike<unknown>).then(resolve, resolve) })
}

/** The cache's two methods; each read waits until the test settles it, and the test speaks for the revocation feed. */
class HeldStore implements TokenLookup {
  readonly records = new Map<string, AccessTokenRecord>()
  readonly reads: Array<{ hash: string, answer: Pending<AccessTokenRecord | undefined> }> = []
  listener: RevocationListener | undefined

  getAccessToken (hash: string): Pending<AccessTokenRecord | undefined> {
    const answer = new Pending<AccessTokenRecord | undefined>()
    this.reads.push({ hash, answer })
    return answer
  }

  async onRevocation (listener: RevocationListener): Promise<void> {
    this.listener = listener
  }

  /** Answers the oldest read still waiting, as the store is now (from a turn of its own, as a store's answer comes). */
  async answerNext (): Promise<void> {
    const read = this.reads.shift()
    if (read === undefined) throw new Error('no read is waiting')
    await new Promise((resolve) => setImmediate(resolve))
    read.answer.resolve(this.records.get(read.hash))
  }
}

t.test('concurrent misses for one token share one read; then it is held', async (t) => {
  const store = new HeldStore()
  const cache = new TokenCache(store, SECRET, OPTIONS)
  const { token, macKey, hash, record } = issue()
  store.records.set(hash, record)
  const lookups = Array.from({ length: 20 }, () => cache.lookup(token))
  t.equal(store.reads.length, 1, 'one store read for 20 lookups')
  await store.answerNext()
  const found = await Promise.all(lookups)
  t.same(new Set(found.map(keyOf)), new Set([signedUnder(macKey)]), 'every lookup got the token')
  t.equal(found[0]!.identity, found[19]!.identity, 'one identity, made once')
  t.equal(cache.lookup(token), found[0], 'held: answered at once')
  t.same(cache.stats, { hits: 1, misses: 20 })
})

t.test('a revocation arriving during a read: its answer is not cached, its waiters get a second read', async (t) => {
  const store = new HeldStore()
  const cache = new TokenCache(store, SECRET, OPTIONS)
  const { token, hash, record } = issue()
  store.records.set(hash, record)
  const first = cache.lookup(token)
  t.equal(store.reads.length, 1)
  // Revoked while the read is in flight: the store has already answered with the live record.
  store.listener!([hash])
  store.records.delete(hash)
  const later = cache.lookup(token)
  t.equal(store.reads.length, 2, 'a lookup after the revocation does not wait on the overtaken read')
  const stale = store.reads.shift()!
  stale.answer.resolve(record)
  await store.answerNext()
  t.equal(await first, undefined, 'the request that waited on the overtaken read is refused')
  t.equal(await later, undefined)
  t.equal(store.reads.length, 0, 'the overtaken read\'s waiters joined the read begun since')
  t.equal(cache.size, 1, 'only the read after the revocation is held (the token as unknown)')
  t.equal(cache.lookup(token), undefined, 'refused at once from then on')
  t.equal(store.reads.length, 0)
})

t.test('a revocation during a read with nothing begun since: the waiters read again themselves', async (t) => {
  const store = new HeldStore()
  const cache = new TokenCache(store, SECRET, OPTIONS)
  const { token, hash, record } = issue()
  const other = issue()
  store.records.set(hash, record)
  store.records.set(other.hash, other.record)
  const waiting = [cache.lookup(token), cache.lookup(token)]
  const bystander = cache.lookup(other.token)
  store.listener!([hash, 'a hash this instance never saw'])
  store.records.delete(hash)
  await store.answerNext()
  t.equal(store.reads.length, 2, 'the bystander\'s read, and one read again for both waiters')
  await store.answerNext()
  await store.answerNext()
  t.same(await Promise.all(waiting), [undefined, undefined])
  t.equal((await bystander)?.identity.clientId, 'client-1', 'another token\'s read is untouched')
  t.equal(cache.size, 2, 'the bystander and the revoked token (as unknown) held')
})

t.test('a gap in the revocation feed during a read: every read in flight is overtaken, the cache dropped', async (t) => {
  const store = new HeldStore()
  const cache = new TokenCache(store, SECRET, OPTIONS)
  const held = issue()
  const reading = issue()
  store.records.set(held.hash, held.record)
  store.records.set(reading.hash, reading.record)
  const warm = cache.lookup(held.token)
  await store.answerNext()
  t.ok(await warm)
  t.equal(cache.size, 1)
  const pending = cache.lookup(reading.token)
  store.listener!(null)
  t.equal(cache.size, 0, 'the held token dropped')
  await store.answerNext()
  t.equal(store.reads.length, 1, 'the read in flight is made again')
  await store.answerNext()
  t.equal((await pending)?.identity.clientId, 'client-1', 'still live: admitted by the second read')
  t.equal(cache.size, 1, 'and held from it')
  // A revocation that names it now drops it: its hash is known from the second read.
  store.listener!([reading.hash])
  t.equal(cache.size, 0)
})

t.test('a failed read is every waiter\'s failure, and leaves no read in flight behind', async (t) => {
  const store = new HeldStore()
  const cache = new TokenCache(store, SECRET, OPTIONS)
  const { token, hash, record } = issue()
  const waiting = [cache.lookup(token), cache.lookup(token)].map(outcome)
  store.reads.shift()!.answer.reject(errors.storeUnavailable())
  for (const lookup of waiting) t.match(await lookup, { kind: 'storeUnavailable' })
  t.equal(cache.size, 0, 'nothing cached')
  store.records.set(hash, record)
  const again = cache.lookup(token)
  t.equal(store.reads.length, 1, 'the next lookup reads afresh')
  await store.answerNext()
  t.ok(await again)
  // Revoked after a failed read and a good one: the hash still finds the entry.
  store.listener!([hash])
  t.equal(cache.size, 0)
})

t.test('a record whose mac_key does not open: every waiter\'s failure, nothing held', async (t) => {
  const store = new HeldStore()
  const cache = new TokenCache(store, SECRET, OPTIONS)
  const { token, hash, record } = issue()
  store.records.set(hash, { ...record, macKeySealed: sealMacKey(mintToken(SECRET, newGrantId()), mintMacKey()) })
  const waiting = [cache.lookup(token), cache.lookup(token)].map(outcome)
  await store.answerNext()
  for (const lookup of waiting) t.match(await lookup, { message: /authenticate/ }, 'the opening\'s error')
  t.equal(cache.size, 0)
  store.records.set(hash, record)
  const again = outcome(cache.lookup(token))
  t.equal(store.reads.length, 1, 'read afresh')
  await store.answerNext()
  t.ok(await again)
})

t.test('reads in flight are bounded by the cache\'s size: past it a miss reads alone and keeps nothing', async (t) => {
  const store = new HeldStore()
  const cache = new TokenCache(store, SECRET, { ...OPTIONS, max: 2 })
  const tokens = [issue(), issue(), issue()]
  for (const { hash, record } of tokens) store.records.set(hash, record)
  const lookups = tokens.map(({ token }) => cache.lookup(token))
  const unshared = cache.lookup(tokens[2]!.token)
  t.equal(store.reads.length, 4, 'two shared reads, then one read each for the third token')
  for (let i = 0; i < 4; i++) await store.answerNext()
  t.ok((await Promise.all([...lookups, unshared])).every((found) => found !== undefined), 'all answered')
  t.equal(cache.size, 2, 'only the shared reads were kept')
  t.ok(cache.lookup(tokens[0]!.token), 'held')
  const third = cache.lookup(tokens[2]!.token)
  t.equal(store.reads.length, 1, 'the third is read again: nothing of it was kept')
  await store.answerNext()
  t.ok(await third)
})

t.test('max 0 turns the cache off: every lookup reads the store, nothing is held', async (t) => {
  const store = new HeldStore()
  const cache = new TokenCache(store, SECRET, { ...OPTIONS, max: 0 })
  const { token, hash, record } = issue()
  store.records.set(hash, record)
  const lookups = [cache.lookup(token), cache.lookup(token)].map(outcome)
  t.equal(store.reads.length, 2, 'a read each')
  await store.answerNext()
  await store.answerNext()
  for (const lookup of lookups) t.ok(await lookup)
  t.equal(cache.size, 0)
  store.listener!([hash])
  store.listener!(null)
  t.equal(cache.size, 0, 'revocations find nothing to drop')
})

t.test('a value without our tag is refused at once: no read, nothing held', async (t) => {
  const store = new HeldStore()
  const cache = new TokenCache(store, SECRET, OPTIONS)
  t.equal(cache.lookup(`${newGrantId()}.${randomBase64Url(32)}${randomBase64Url(12)}`), undefined)
  t.equal(cache.lookup('not a token'), undefined)
  t.equal(store.reads.length, 0)
  t.equal(cache.size, 0)
  t.same(cache.stats, { hits: 0, misses: 2 })
})

t.test('an expired token is refused: on a hit at its expiry, and when read expired', async (t) => {
  const store = new HeldStore()
  const cache = new TokenCache(store, SECRET, OPTIONS)
  const now = Date.now()
  const { token, hash, record } = issue(now + 1000)
  store.records.set(hash, record)
  const live = cache.lookup(token, now)
  await store.answerNext()
  t.ok(await live, 'live at first')
  t.equal(cache.lookup(token, now + 1000), undefined, 'a hit at its expiry is refused')
  const expired = issue(now - 1)
  store.records.set(expired.hash, expired.record)
  const late = cache.lookup(expired.token, now)
  await store.answerNext()
  t.equal(await late, undefined, 'read already expired: refused')
})

t.test('entries are read again on the clock given: a live token after maxAgeMs, an unknown one after negativeTtlMs', async (t) => {
  const store = new HeldStore()
  let now = 1_000_000_000_000
  const cache = new TokenCache(store, SECRET, OPTIONS, () => now)
  const { token, macKey, hash, record } = issue(now + 3_600_000)
  store.records.set(hash, record)
  const first = cache.lookup(token)
  await store.answerNext()
  t.equal(keyOf(await first), signedUnder(macKey))
  now += OPTIONS.maxAgeMs - 1
  t.equal(keyOf(cache.lookup(token)), signedUnder(macKey), 'held until maxAgeMs')
  t.equal(store.reads.length, 0)
  now += 1
  const again = cache.lookup(token)
  t.equal(store.reads.length, 1, 'at maxAgeMs, read again')
  await store.answerNext()
  t.equal(keyOf(await again), signedUnder(macKey))
  t.equal(cache.size, 1, 'one entry, the new read\'s')
  t.equal(keyOf(cache.lookup(token)), signedUnder(macKey), 'held again')

  const unknown = issue(now + 3_600_000)
  const missing = cache.lookup(unknown.token)
  await store.answerNext()
  t.equal(await missing, undefined, 'unknown to the store')
  now += OPTIONS.negativeTtlMs - 1
  t.equal(cache.lookup(unknown.token), undefined, 'remembered as unknown until negativeTtlMs: no read')
  t.equal(store.reads.length, 0)
  now += 1
  store.records.set(unknown.hash, unknown.record)
  const issuedSince = cache.lookup(unknown.token)
  t.equal(store.reads.length, 1, 'at negativeTtlMs, read again')
  await store.answerNext()
  t.equal(keyOf(await issuedSince), signedUnder(unknown.macKey), 'and found now')
})

t.test('a token past its expiry is refused from the cache without a read until maxAgeMs', async (t) => {
  const store = new HeldStore()
  let now = 1_000_000_000_000
  const cache = new TokenCache(store, SECRET, OPTIONS, () => now)
  const { token, hash, record } = issue(now + 1000)
  store.records.set(hash, record)
  const first = cache.lookup(token)
  await store.answerNext()
  t.ok(await first)
  now += 1000
  t.equal(cache.lookup(token), undefined, 'expired: refused')
  now += OPTIONS.maxAgeMs - 1001
  t.equal(cache.lookup(token), undefined, 'still refused from the cache')
  t.equal(store.reads.length, 0, 'no read')
  t.same(cache.stats, { hits: 2, misses: 1 })
})

t.test('on Redis: a turn\'s misses are one MGET, a token\'s concurrent misses one key; an outage fails them all', async (t) => {
  const redis = await startRedis(t)
  const counting = process.env.REDIS_URL === undefined || process.env.REDIS_URL === ''
  const store = await new RedisStore(redis.url, { prefix: redis.prefix }).connect()
  const admin = new Redis(redis.url)
  t.teardown(async () => {
    admin.disconnect()
    await store.close()
  })
  const cache = new TokenCache(store, SECRET, OPTIONS)
  await cache.ready
  const issued = Array.from({ length: 10 }, () => issue())
  for (const { grantId, hash, record } of issued) await store.saveTokens({ grantId, access: { hash, record } })
  const unknown = mintToken(SECRET, newGrantId())
  const before = await commandCalls(admin)
  const found = await Promise.all([...issued, ...issued].map(async ({ token }) => await cache.lookup(token)).concat([Promise.resolve(cache.lookup(unknown))]))
  if (counting) t.same(callsSince(before, await commandCalls(admin)), { mget: 1 }, 'one MGET for the turn')
  t.same(found.slice(0, 20).map(keyOf), [...issued, ...issued].map(({ macKey }) => signedUnder(macKey)), 'each lookup its token')
  t.equal(found[20], undefined, 'an unknown token: refused')
  t.equal(cache.size, 11, 'all held, the unknown one too')

  // A record Redis holds that is not one: that read fails alone, the turn's others are answered.
  const [broken, sound] = [issue(), issue()]
  await admin.set(`${redis.prefix}{g:${broken.grantId}}:at:${broken.hash}`, 'not a record')
  await store.saveTokens({ grantId: sound.grantId, access: { hash: sound.hash, record: sound.record } })
  const turn = [cache.lookup(broken.token), cache.lookup(sound.token)].map(outcome)
  t.type(await turn[0], SyntaxError, 'the broken record\'s read fails')
  t.equal(keyOf(await turn[1]), signedUnder(sound.macKey), 'the other read of its turn is answered')

  await redis.stop().catch(() => { t.comment('a shared REDIS_URL cannot be stopped') })
  if (!counting) return
  const fresh = issue()
  const misses = [cache.lookup(fresh.token), cache.lookup(mintToken(SECRET, newGrantId()))].map(outcome)
  for (const lookup of misses) t.match(await lookup, { kind: 'storeUnavailable' }, 'the store outage')
  t.equal(keyOf(cache.lookup(issued[0]!.token)), signedUnder(issued[0]!.macKey), 'held tokens still answered, at once')
})
