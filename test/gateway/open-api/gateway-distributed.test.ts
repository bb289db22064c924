// Two gateway instances on one Redis, called over real HTTP: the shared suite (tokens, nonces and
// revocations shared), a removed client's tokens refused; each instance's token LRU coalesces
// misses, remembers unknown tokens and never asks Redis about forged ones.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import t from 'tap'
import { signRequest } from '../../../plugin/client/index.ts'
import { computeMac } from '../../../plugin/mac/signature.ts'
import { mintMacKey, mintToken, newGrantId, randomBase64Url } from '../../../plugin/access/credentials.ts'
import { addClient } from '../../helpers/app.ts'
import { gatewayPairSuite, REVOKED } from '../../helpers/gateway-pair-suite.ts'
import { callsSince, commandCalls, issueTokens, keyspaceMisses, liveGateway, pollUntilRefused, signedGet } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'

const redis = await startRedis(t)
// Command counts need a Redis nobody else talks to.
const ownRedis = process.env.REDIS_URL === undefined || process.env.REDIS_URL === ''
const counting = { skip: ownRedis ? false : 'counts Redis commands: needs a redis-server of its own, not REDIS_URL' }
const secret = randomBytes(32).toString('base64url')
const a = await liveGateway(t, redis, secret)
const b = await liveGateway(t, redis, secret)
const admin = new Redis(redis.url)
t.teardown(async () => { await admin.quit() })

// What two instances share, as on a Redis Cluster (helpers/gateway-pair-suite.ts); a revocation
// reaches the other instance within 1 s here, and a cached answer's commands are counted.
gatewayPairSuite(t, { a, b, revokedWithinMs: 1000, ...(ownRedis && { counting: admin }) })

t.test('removing the client through A revokes its tokens on B within 1 s', async (t) => {
  const { clientId, clientSecret } = await addClient(a.store)
  const { tokens } = await issueTokens(a, clientId, clientSecret)
  const { tokens: other } = await issueTokens(a, clientId, clientSecret)
  t.equal((await signedGet(b.origin, '/user/profile', tokens)).status, 200, 'B warmed')
  t.equal((await signedGet(b.origin, '/user/profile', other)).status, 200, 'B warmed with a second grant')
  const since = Date.now()
  t.equal(await a.store.removeClient(clientId), true)
  for (const held of [tokens, other]) {
    const { last, elapsed } = await pollUntilRefused(b.origin, '/user/profile', held, since)
    t.same(last.body, REVOKED)
    t.ok(elapsed < 1000, `B refused a token of the removed client ${elapsed} ms after the removal`)
  }
})

t.test('50 simultaneous calls with one fresh token on a cold instance: one token read', counting, async (t) => {
  const { clientId, clientSecret } = await addClient(a.store)
  const { tokens } = await issueTokens(a, clientId, clientSecret)
  const before = await commandCalls(admin)
  const answers = await Promise.all(Array.from({ length: 50 }, async () => await signedGet(b.origin, '/user/profile', tokens)))
  const delta = callsSince(before, await commandCalls(admin))
  t.same(answers.map((answer) => answer.status), Array(50).fill(200))
  const { evalsha = 0, ttl = 0, expire = 0, ...counted } = delta
  t.same(counted, { mget: 1, sadd: 50 }, 'one token read (the turn\'s MGET), one nonce SADD per call')
  t.ok(evalsha >= 1 && evalsha <= 50, `the nonce SADDs went in ${evalsha} batch script calls`)
  // Each batch checks the expiry of each set it wrote to once, and sets it only on a set that has none.
  t.ok(ttl >= evalsha && ttl <= 50, `one TTL check per set a batch wrote to: ${ttl} for ${evalsha} batches`)
  t.ok(expire <= ttl, `an expiry set only where there was none: ${expire}`)
})

t.test('50 lookups of one fresh token in one tick share one store read', counting, async (t) => {
  const { clientId, clientSecret } = await addClient(a.store)
  const { tokens } = await issueTokens(a, clientId, clientSecret)
  const before = await commandCalls(admin)
  const found = await Promise.all(Array.from({ length: 50 }, async () => await b.app.macVerifier.cache.lookup(tokens.access_token)))
  t.same(callsSince(before, await commandCalls(admin)), { mget: 1 })
  t.same(new Set(found.map((token) => token?.signingKey.digest('probe', 'base64'))), new Set([computeMac(tokens.mac_key, 'probe')]), 'every lookup got the token')
})

t.test('a flood of unknown but well-formed tokens: one key read per token, then none', counting, async (t) => {
  const unknown = Array.from({ length: 200 }, () => ({ access_token: mintToken(secret, newGrantId()), mac_key: mintMacKey() }))
  const flood = async (): Promise<Array<{ status: number, body: Record<string, unknown> }>> => {
    const answers = []
    for (let batch = 0; batch < unknown.length; batch += 50) {
      answers.push(...await Promise.all(unknown.slice(batch, batch + 50).map(async (tokens) => await signedGet(b.origin, '/user/profile', tokens))))
    }
    return answers
  }
  let before = await commandCalls(admin)
  const missesBefore = await keyspaceMisses(admin)
  const started = Date.now()
  const first = await flood()
  const { mget = 0, ...other } = callsSince(before, await commandCalls(admin))
  t.same(other, {}, 'token reads, nothing else')
  t.ok(mget >= 4 && mget <= 200, `the reads went in ${mget} MGETs, one per event-loop turn`)
  t.equal(await keyspaceMisses(admin) - missesBefore, 200, 'one key read per distinct unknown token')
  t.same(new Set(first.map((answer) => answer.status)), new Set([401]))
  t.same(first[0]!.body, REVOKED)
  t.same(new Set(first.map((answer) => answer.body.code)), new Set([96008]))

  before = await commandCalls(admin)
  const again = await flood()
  t.ok(Date.now() - started < 10_000, 'the repeat came within the 10 s negative cache time')
  t.same(callsSince(before, await commandCalls(admin)), {}, 'repeats are answered from the negative cache')
  t.same(new Set(again.map((answer) => answer.body.code)), new Set([96008]))
})

t.test('forged tokens (wrong tag) make no Redis call at all', counting, async (t) => {
  const shaped = (): string => `${randomBase64Url(12)}.${randomBase64Url(32)}${randomBase64Url(12)}`
  const forged = Array.from({ length: 200 }, () => ({ access_token: shaped(), mac_key: mintMacKey() }))
  t.equal(forged[0]!.access_token.length, mintToken(secret, newGrantId()).length, 'the same shape as an issued token')
  // A real token's body with its tag changed, and one signed under another secret.
  forged.push({ access_token: `${mintToken(secret, newGrantId()).slice(0, -16)}${randomBase64Url(12)}`, mac_key: mintMacKey() })
  forged.push({ access_token: mintToken(randomBytes(32).toString('base64url'), newGrantId()), mac_key: mintMacKey() })
  const before = await commandCalls(admin)
  const answers = await Promise.all(forged.map(async (tokens) => await signedGet(b.origin, '/user/profile', tokens)))
  t.same(callsSince(before, await commandCalls(admin)), {}, 'no command reached Redis')
  t.same(new Set(answers.map((answer) => answer.status)), new Set([401]))
  t.same(answers[0]!.body, REVOKED)
  t.same(new Set(answers.map((answer) => answer.body.code)), new Set([96008]))
  // signRequest with a token that cannot be ours still produces a parseable header.
  t.match(signRequest({ method: 'GET', url: `${b.origin}/user/profile`, accessToken: forged[0]!.access_token, macKey: 'k' }), /^MAC access_token="/)
})
