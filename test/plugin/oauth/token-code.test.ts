// The token endpoint's authorization_code grant (contract section 4): the exact success answer,
// the ways a client may call it, openId, single use and lifetimes.
import { createHash } from 'node:crypto'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { buildGateway } from '../../../gateway/index.ts'
import macgate from '../../../plugin/index.ts'
import { hashSecret } from '../../../plugin/access/credentials.ts'
import { MemoryStore } from '../../../plugin/store/memory/memory-store.ts'
import type { RedisStore } from '../../../plugin/store/redis/redis-store.ts'
import { addClient, authorizeAndAllow, buildTestApp, callToken, obtainCode, REDIRECT_URI } from '../../helpers/app.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { eventually } from '../../helpers/live.ts'
import { assertTokenError, assertTokenSet, basicAuth, codeParams, grantOf, NINETY_DAYS, refreshParams, TEN_YEARS } from '../../helpers/token-checks.ts'

const STORES = ['memory', 'redis'] as const

async function setup (t: Test, options: Parameters<typeof buildTestApp>[1] = {}) {
  const { app, store } = await buildTestApp(t, options)
  const client = await addClient(store)
  return { app, store, client }
}

for (const kind of STORES) {
  t.test(`${kind}: GET with query parameters answers the exact token set`, async (t) => {
    const { app, client } = await setup(t, { store: kind })
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    assertTokenSet(t, await callToken(app, codeParams(client, code)))
  })

  t.test(`${kind}: POST with a form body answers the same`, async (t) => {
    const { app, client } = await setup(t, { store: kind })
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    assertTokenSet(t, await callToken(app, codeParams(client, code), { method: 'POST' }))
  })
}

t.test('HTTP Basic client authentication, by GET and by POST', async (t) => {
  const { app, client } = await setup(t)
  const authorization = basicAuth(client.clientId, client.clientSecret)
  for (const method of ['GET', 'POST'] as const) {
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    const { client_id: _id, client_secret: _secret, ...params } = codeParams(client, code)
    assertTokenSet(t, await callToken(app, params, { method, headers: { authorization } }))
  }
  // A client_id parameter beside Basic is fine when it names the same client.
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  const { client_secret: _secret, ...withId } = codeParams(client, code)
  assertTokenSet(t, await callToken(app, withId, { headers: { authorization } }))
})

t.test('token_type=mac is accepted, any other token_type is 96002', async (t) => {
  const { app, client } = await setup(t)
  const first = await obtainCode(app, client.clientId, { scope: '1 3' })
  assertTokenSet(t, await callToken(app, codeParams(client, first.code, { token_type: 'mac' })))
  const second = await obtainCode(app, client.clientId, { scope: '1 3' })
  assertTokenError(t, await callToken(app, codeParams(client, second.code, { token_type: 'bearer' })), 96002)
  // The refused request did not spend the code.
  assertTokenSet(t, await callToken(app, codeParams(client, second.code)))
})

t.test('the granted scope comes back space-joined; without a scope parameter, the client default', async (t) => {
  const { app, client } = await setup(t)
  const narrow = await obtainCode(app, client.clientId, { scope: '1  3 1' })
  assertTokenSet(t, await callToken(app, codeParams(client, narrow.code)), { scope: '1 3' })
  const all = await obtainCode(app, client.clientId)
  assertTokenSet(t, await callToken(app, codeParams(client, all.code)), { scope: '1 3 4 6' })
})

t.test('the token request redirect_uri may differ from the registered one in its query only', async (t) => {
  const { app, client } = await setup(t)
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  assertTokenSet(t, await callToken(app, codeParams(client, code, { redirect_uri: `${REDIRECT_URI}?from=token` })))
})

t.test('a client-specific access token lifetime is the expires_in', async (t) => {
  const { app, store } = await buildTestApp(t)
  const client = await addClient(store, { accessTokenTtl: 3600 })
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  assertTokenSet(t, await callToken(app, codeParams(client, code)), { expiresIn: 3600 })
})

for (const kind of STORES) {
  t.test(`${kind}: openId is stable per (user, client), differs across clients, is not the user id`, async (t) => {
    const { app, store, client } = await setup(t, { store: kind })
    const other = await addClient(store)
    const { code, user, browser } = await obtainCode(app, client.clientId, { scope: '1 3' })
    const first = assertTokenSet(t, await callToken(app, codeParams(client, code)))
    const authorize = async (c: typeof client): Promise<string> => {
      const location = await authorizeAndAllow(browser, user, { client_id: c.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1 3' })
      return location.searchParams.get('code')!
    }
    const again = assertTokenSet(t, await callToken(app, codeParams(client, await authorize(client))))
    const elsewhere = assertTokenSet(t, await callToken(app, codeParams(other, await authorize(other))))
    t.equal(again.openId, first.openId, 'same user and client: same openId')
    t.not(again.access_token, first.access_token, 'a second authorization is a new token')
    t.not(elsewhere.openId, first.openId, 'another client: another openId')
    for (const openId of [first.openId, elsewhere.openId]) {
      t.not(openId, user.userId, 'openId is not the user id')
      t.notOk(openId.includes(user.userId), 'openId does not carry the user id')
    }
    const someoneElse = await obtainCode(app, client.clientId, { scope: '1 3' })
    t.not(assertTokenSet(t, await callToken(app, codeParams(client, someoneElse.code))).openId, first.openId, 'another user: another openId')
  })

  t.test(`${kind}: a code works once; a second exchange is 96013 and revokes what the first gave`, async (t) => {
    const { app, store, client } = await setup(t, { store: kind })
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    const issued = assertTokenSet(t, await callToken(app, codeParams(client, code)))
    const grantId = grantOf(app, issued.access_token)
    t.ok(await store.getAccessToken(hashSecret(issued.access_token), grantId), 'access token stored after the exchange')

    assertTokenError(t, await callToken(app, codeParams(client, code)), 96013)
    t.equal(await store.getAccessToken(hashSecret(issued.access_token), grantId), undefined, 'access token revoked')
    t.equal(await store.getRefreshToken(hashSecret(issued.refresh_token), grantOf(app, issued.refresh_token)), undefined, 'refresh token revoked')
    assertTokenError(t, await callToken(app, refreshParams(client, issued.refresh_token)), 96009)
    // A third try, by POST, is still refused.
    assertTokenError(t, await callToken(app, codeParams(client, code), { method: 'POST' }), 96013)
  })

  t.test(`${kind}: an expired code is 96013 (codeTtl: 1)`, async (t) => {
    const clock = steppedClock()
    const { app, store, client } = await setup(t, { store: kind, codeTtl: 1, clock: clock.now })
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    // The embedded store expires the code by its clock, stepped; Redis by the key's TTL, on its
    // own clock: waited for by watching the code's key go.
    if (kind === 'memory') clock.step(1500)
    else t.ok(await eventually(async () => await store.getCode(hashSecret(code), grantOf(app, code)) === undefined, 3000, 50), 'Redis let the code go')
    assertTokenError(t, await callToken(app, codeParams(client, code)), 96013)
  })

  t.test(`${kind}: stored lifetimes: code 300 s, access token 90 days, refresh token 10 years`, async (t) => {
    const { app, store, client } = await setup(t, { store: kind })
    t.equal(app.macgate.codeTtl, 300, 'default codeTtl')
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    const grantId = grantOf(app, code)
    if (store.kind === 'redis') {
      const redis = store as RedisStore
      const codeKey = `${redis.prefix}{g:${grantId}}:code:${hashSecret(code)}`
      const pttl = await redis.redis.pttl(codeKey)
      t.ok(pttl > 295_000 && pttl <= 300_000, `code key pttl ${pttl} ms is about 300 s`)
    }
    const before = Date.now()
    const issued = assertTokenSet(t, await callToken(app, codeParams(client, code)))
    const access = await store.getAccessToken(hashSecret(issued.access_token), grantId)
    const refresh = await store.getRefreshToken(hashSecret(issued.refresh_token), grantId)
    t.ok(access !== undefined && Math.abs(access.expiresAt - before - NINETY_DAYS * 1000) < 5000, 'access record expires in 90 days')
    t.ok(refresh !== undefined && Math.abs(refresh.expiresAt - before - TEN_YEARS * 1000) < 5000, 'refresh record expires in 10 years')
    if (store.kind === 'redis') {
      const redis = store as RedisStore
      const ttl = async (member: string): Promise<number> => await redis.redis.ttl(`${redis.prefix}{g:${grantId}}:${member}`)
      const accessTtl = await ttl(`at:${hashSecret(issued.access_token)}`)
      const refreshTtl = await ttl(`rt:${hashSecret(issued.refresh_token)}`)
      t.ok(accessTtl > NINETY_DAYS - 5 && accessTtl <= NINETY_DAYS, `access key ttl ${accessTtl}`)
      t.ok(refreshTtl > TEN_YEARS - 5 && refreshTtl <= TEN_YEARS, `refresh key ttl ${refreshTtl}`)
      t.ok(await ttl('members') >= refreshTtl, 'the grant member set lives as long as its refresh token')
    }
  })
}

t.test('codeTtl above 600 s is refused at registration; 600 is accepted', async (t) => {
  const store = new MemoryStore()
  t.teardown(async () => { await store.close() })
  for (const codeTtl of [601, 0]) {
    const bare = Fastify()
    await t.rejects(async () => { await bare.register(macgate, { store, codeTtl }) }, { name: 'RangeError', message: /codeTtl/ }, `plugin codeTtl ${codeTtl}`)
    await bare.close()
  }
  await t.rejects(buildGateway({ store, config: { codeTtl: 601 } }), { message: /codeTtl/ }, 'gateway config codeTtl 601')
  const app = await buildGateway({ store, config: { codeTtl: 600 } })
  t.equal(app.macgate.codeTtl, 600)
  await app.close()
})

t.test('PKCE S256: the verifier is demanded and checked', async (t) => {
  const { app, client } = await setup(t)
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
  const challenge = createHash('sha256').update(verifier).digest('base64url')
  const pkce = { scope: '1 3', code_challenge: challenge, code_challenge_method: 'S256' }

  const missing = await obtainCode(app, client.clientId, pkce)
  assertTokenError(t, await callToken(app, codeParams(client, missing.code)), 96004)
  const wrong = await obtainCode(app, client.clientId, pkce)
  assertTokenError(t, await callToken(app, codeParams(client, wrong.code, { code_verifier: 'x'.repeat(43) })), 96004)
  const malformed = await obtainCode(app, client.clientId, pkce)
  assertTokenError(t, await callToken(app, codeParams(client, malformed.code, { code_verifier: 'too-short' })), 96002)
  assertTokenError(t, await callToken(app, codeParams(client, malformed.code, { code_verifier: `${verifier}!` })), 96002)
  const right = await obtainCode(app, client.clientId, pkce)
  assertTokenSet(t, await callToken(app, codeParams(client, right.code, { code_verifier: verifier }), { method: 'POST' }))
})
