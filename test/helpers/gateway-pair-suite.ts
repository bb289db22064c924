// One suite for two gateway instances on one shared store, called over real HTTP: tokens, nonces
// and revocations are shared. Run on a single Redis (test/gateway/open-api/gateway-distributed.test.ts) and on a
// Redis Cluster (test/gateway/open-api/gateway-cluster.test.ts), the way helpers/store-suite.ts runs on each store;
// what only one of them has stays in its file.
import type { Redis } from 'ioredis'
import type { Test } from 'tap'
import { addClient } from './app.ts'
import { callsSince, codeExchange, commandCalls, issueTokens, pollUntilRefused, refreshExchange, signedGet, tokenRequest, type LiveGateway } from './live.ts'

export interface GatewayPair {
  a: LiveGateway
  b: LiveGateway
  /** How soon a revocation on one instance reaches the other's token LRU. */
  revokedWithinMs: number
  /** A client of a Redis nobody else talks to, to count the commands a cached answer makes; none where that cannot be. */
  counting?: Redis
}

export const REVOKED = { result: 'error', description: 'access token invalid or expired', code: 96008 }

export function gatewayPairSuite (t: Test, { a, b, revokedWithinMs, counting }: GatewayPair): void {
  t.test('a token issued through A works on B, and B rotates the refresh token A issued', async (t) => {
    const { clientId, clientSecret } = await addClient(a.store)
    const { tokens } = await issueTokens(a, clientId, clientSecret)
    const profile = await signedGet(b.origin, '/user/profile', tokens)
    t.equal(profile.status, 200)
    t.equal(profile.body.result, 'ok')
    t.match(profile.body.data, { miliaoNick: /^user-[0-9a-f]{8}$/ })
    // Both instances derive the same openId from the shared secret.
    const openId = await signedGet(b.origin, '/user/openidV2', tokens)
    t.equal(openId.status, 200)
    t.same(openId.body, { result: 'ok', description: 'success', data: { openid: tokens.openId }, code: 0 })
    const rotated = await tokenRequest(b.origin, refreshExchange(clientId, clientSecret, tokens.refresh_token!))
    t.equal(rotated.status, 200, 'B rotates the refresh token A issued')
  })

  t.test('a nonce used on A is refused on B', async (t) => {
    const { clientId, clientSecret } = await addClient(a.store)
    const { tokens } = await issueTokens(a, clientId, clientSecret)
    const first = await signedGet(a.origin, '/user/profile', tokens)
    t.equal(first.status, 200)
    // The same header (same host name, port aside) replayed at the other instance.
    const replay = await signedGet(b.origin, '/user/profile', tokens, first.authorization)
    t.equal(replay.status, 401)
    t.equal(replay.wwwAuthenticate, 'MAC')
    t.same(replay.body, { result: 'error', description: 'nonce already used', code: 96012 })
    const fresh = await signedGet(b.origin, '/user/profile', tokens)
    t.equal(fresh.status, 200, 'a fresh nonce is still accepted on B')
  })

  t.test(`a code replayed at A revokes the token B holds in its LRU, within ${revokedWithinMs} ms`, async (t) => {
    const { clientId, clientSecret } = await addClient(a.store)
    const { code, tokens } = await issueTokens(a, clientId, clientSecret)
    t.equal((await signedGet(b.origin, '/user/profile', tokens)).status, 200, 'B warmed')
    if (counting !== undefined) {
      const before = await commandCalls(counting)
      t.equal((await signedGet(b.origin, '/user/profile', tokens)).status, 200)
      // The nonce's set gets its expiry if it is new (one of 256 per tag and minute).
      const { expire = 0, ...calls } = callsSince(before, await commandCalls(counting))
      t.same(calls, { sadd: 1, ttl: 1, evalsha: 1 }, 'B answers from its LRU: no GET, only the nonce SADD and its set\'s TTL check (in the batch script)')
      t.ok(expire <= 1, 'at most one expiry set')
    }
    const replay = await tokenRequest(a.origin, codeExchange(clientId, clientSecret, code))
    const since = Date.now()
    t.equal(replay.status, 400)
    t.same(replay.body, { error: 96013, error_description: 'code already used' })
    const { last, elapsed, polls } = await pollUntilRefused(b.origin, '/user/profile', tokens, since)
    t.equal(last.status, 401)
    t.same(last.body, REVOKED)
    t.ok(elapsed < revokedWithinMs, `B refused the token ${elapsed} ms after the replay answered (${polls} polls)`)
    t.equal((await signedGet(a.origin, '/user/profile', tokens)).status, 401, 'A refuses it too')
  })

  t.test(`refresh token reuse at A revokes the grant on B within ${revokedWithinMs} ms`, async (t) => {
    const { clientId, clientSecret } = await addClient(a.store)
    const { tokens: first } = await issueTokens(a, clientId, clientSecret)
    t.equal((await signedGet(b.origin, '/user/profile', first)).status, 200, 'B warmed with the first access token')

    const rotated = await tokenRequest(a.origin, refreshExchange(clientId, clientSecret, first.refresh_token!))
    const since = Date.now()
    t.equal(rotated.status, 200)
    const second = rotated.body as { access_token: string, mac_key: string, refresh_token: string }
    t.not(second.access_token, first.access_token)
    // Rotation revokes the access token issued beside the spent refresh token.
    const dropped = await pollUntilRefused(b.origin, '/user/profile', first, since)
    t.same(dropped.last.body, REVOKED)
    t.ok(dropped.elapsed < revokedWithinMs, `B dropped the rotated-out token ${dropped.elapsed} ms after the rotation answered`)

    t.equal((await signedGet(b.origin, '/user/profile', second)).status, 200, 'B warmed with the second access token')
    const reuse = await tokenRequest(a.origin, refreshExchange(clientId, clientSecret, first.refresh_token!))
    const reuseAt = Date.now()
    t.equal(reuse.status, 400)
    t.same(reuse.body, { error: 96009, error_description: 'refresh token already used' })
    const { last, elapsed } = await pollUntilRefused(b.origin, '/user/profile', second, reuseAt)
    t.same(last.body, REVOKED)
    t.ok(elapsed < revokedWithinMs, `B refused the descendant token ${elapsed} ms after the reuse answered`)
    const spentAgain = await tokenRequest(a.origin, refreshExchange(clientId, clientSecret, second.refresh_token))
    t.equal(spentAgain.status, 400, 'the descendant refresh token is revoked too')
    t.equal(spentAgain.body.error, 96009)
  })

  t.test(`refresh reuse at B revokes the grant hot in A's cache within ${revokedWithinMs} ms`, async (t) => {
    const { clientId, clientSecret } = await addClient(a.store)
    const { tokens: first } = await issueTokens(a, clientId, clientSecret)
    const rotated = await tokenRequest(b.origin, refreshExchange(clientId, clientSecret, first.refresh_token!))
    const second = rotated.body as { access_token: string, mac_key: string }
    t.equal((await signedGet(a.origin, '/user/profile', second)).status, 200, 'A warmed with the successor')
    const reuse = await tokenRequest(b.origin, refreshExchange(clientId, clientSecret, first.refresh_token!))
    const since = Date.now()
    t.same(reuse.body, { error: 96009, error_description: 'refresh token already used' })
    const { last, elapsed } = await pollUntilRefused(a.origin, '/user/profile', second, since)
    t.same(last.body, REVOKED)
    t.ok(elapsed < revokedWithinMs, `A refused the successor ${elapsed} ms after the reuse answered`)
  })
}
