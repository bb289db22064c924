// grant_type=refresh_token (contract section 4): one rotation per refresh token, reuse detection
// revoking the whole grant, narrowing (never widening) the scope.
import t, { type Test } from 'tap'
import { hashSecret } from '../../../plugin/access/credentials.ts'
import { addClient, buildTestApp, callToken, obtainCode, REDIRECT_URI } from '../../helpers/app.ts'
import { assertTokenError, assertTokenSet, basicAuth, codeParams, grantOf, refreshParams, type TokenSetBody } from '../../helpers/token-checks.ts'

const STORES = ['memory', 'redis'] as const

/** An app, a client, and a token set issued to it for scope "1 3". */
async function setup (t: Test, kind: 'memory' | 'redis' = 'memory') {
  const { app, store } = await buildTestApp(t, { store: kind })
  const client = await addClient(store)
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  const issued = assertTokenSet(t, await callToken(app, codeParams(client, code)))
  /** Whether the store still holds the access / refresh token. */
  const live = {
    access: async (body: TokenSetBody): Promise<boolean> => await store.getAccessToken(hashSecret(body.access_token), grantOf(app, body.access_token)) !== undefined,
    refresh: async (body: TokenSetBody): Promise<boolean> => await store.getRefreshToken(hashSecret(body.refresh_token), grantOf(app, body.refresh_token)) !== undefined
  }
  return { app, store, client, issued, live }
}

for (const kind of STORES) {
  t.test(`${kind}: a refresh answers a new token set and spends the old one`, async (t) => {
    const { app, client, issued, live } = await setup(t, kind)
    const refreshed = assertTokenSet(t, await callToken(app, refreshParams(client, issued.refresh_token)))
    t.not(refreshed.access_token, issued.access_token, 'new access_token')
    t.not(refreshed.mac_key, issued.mac_key, 'new mac_key')
    t.not(refreshed.refresh_token, issued.refresh_token, 'new refresh_token')
    t.equal(refreshed.openId, issued.openId, 'same openId')
    t.equal(grantOf(app, refreshed.access_token), grantOf(app, issued.access_token), 'same grant')
    t.equal(await live.access(issued), false, 'the old access token is revoked')
    t.equal(await live.access(refreshed), true, 'the new access token is live')
    t.equal(await live.refresh(refreshed), true, 'the new refresh token is live')

    // The new refresh token refreshes in turn, by POST and with HTTP Basic.
    const { client_id: _id, client_secret: _secret, ...params } = refreshParams(client, refreshed.refresh_token)
    const third = assertTokenSet(t, await callToken(app, params, { method: 'POST', headers: { authorization: basicAuth(client.clientId, client.clientSecret) } }))
    t.equal(third.openId, issued.openId, 'still the same openId')
    t.equal(await live.access(refreshed), false, 'the second access token is revoked')
  })

  t.test(`${kind}: a spent refresh token presented again is 96009 and revokes the whole grant`, async (t) => {
    const { app, client, issued, live } = await setup(t, kind)
    const refreshed = assertTokenSet(t, await callToken(app, refreshParams(client, issued.refresh_token)))
    assertTokenError(t, await callToken(app, refreshParams(client, issued.refresh_token)), 96009)
    t.equal(await live.access(refreshed), false, 'the new access token is revoked')
    t.equal(await live.refresh(refreshed), false, 'the new refresh token is revoked')
    assertTokenError(t, await callToken(app, refreshParams(client, refreshed.refresh_token)), 96009)
    assertTokenError(t, await callToken(app, refreshParams(client, issued.refresh_token)), 96009)
  })

  t.test(`${kind}: scope may narrow, never widen`, async (t) => {
    const { app, client, issued } = await setup(t, kind)
    assertTokenError(t, await callToken(app, refreshParams(client, issued.refresh_token, { scope: '1 4' })), 96007)
    assertTokenError(t, await callToken(app, refreshParams(client, issued.refresh_token, { scope: '2' })), 96007)
    assertTokenError(t, await callToken(app, refreshParams(client, issued.refresh_token, { scope: '99' })), 96007)
    assertTokenError(t, await callToken(app, refreshParams(client, issued.refresh_token, { scope: '' })), 96002)
    assertTokenError(t, await callToken(app, refreshParams(client, issued.refresh_token, { scope: '   ' })), 96002)
    // The refused requests did not spend the refresh token.
    const narrowed = assertTokenSet(t, await callToken(app, refreshParams(client, issued.refresh_token, { scope: '1' })), { scope: '1' })
    const same = assertTokenSet(t, await callToken(app, refreshParams(client, narrowed.refresh_token, { scope: '1 1' })), { scope: '1' })
    assertTokenError(t, await callToken(app, refreshParams(client, same.refresh_token, { scope: '1 4' })), 96007)
    // The narrowing is the access token's: the new refresh token keeps the grant's scope (RFC 6749 §6).
    const whole = assertTokenSet(t, await callToken(app, refreshParams(client, same.refresh_token)), { scope: '1 3' })
    assertTokenSet(t, await callToken(app, refreshParams(client, whole.refresh_token, { scope: '3' })), { scope: '3' })
  })
}

t.test('asking for the whole granted scope, or for none, keeps it', async (t) => {
  const { app, client, issued } = await setup(t)
  const whole = assertTokenSet(t, await callToken(app, refreshParams(client, issued.refresh_token, { scope: '1 3' })), { scope: '1 3' })
  assertTokenSet(t, await callToken(app, refreshParams(client, whole.refresh_token)), { scope: '1 3' })
})

t.test('refresh token errors', async (t) => {
  const { app, store, client, issued, live } = await setup(t)
  const params = refreshParams(client, issued.refresh_token)
  const { refresh_token: _token, ...missing } = params
  assertTokenError(t, await callToken(app, missing), 96002)
  assertTokenError(t, await callToken(app, { ...params, refresh_token: '' }), 96002)
  const flipped = issued.refresh_token.slice(0, -1) + (issued.refresh_token.endsWith('A') ? 'B' : 'A')
  for (const unknown of ['garbage', flipped, issued.access_token, 'x'.repeat(80)]) {
    assertTokenError(t, await callToken(app, { ...params, refresh_token: unknown }), 96009)
  }
  const thief = await addClient(store)
  assertTokenError(t, await callToken(app, refreshParams(thief, issued.refresh_token)), 96004)
  assertTokenError(t, await callToken(app, { ...params, client_secret: 'wrong' }), 96003, 401)
  const { redirect_uri: _uri, ...noRedirect } = params
  assertTokenError(t, await callToken(app, noRedirect), 96010)
  assertTokenError(t, await callToken(app, { ...params, redirect_uri: 'https://evil.example.com/callback' }), 96010)
  assertTokenError(t, await callToken(app, { ...params, token_type: 'bearer' }), 96002)
  assertTokenError(t, await callToken(app, { ...params, refresh_token: 'a'.repeat(5000) }), 96002)
  t.equal(await live.access(issued), true, 'no refused request touched the grant')
  assertTokenSet(t, await callToken(app, params))
})

t.test('a refresh token issued for another registered redirect URI is 96004', async (t) => {
  const other = 'https://app.example.com/other'
  const { app, store } = await buildTestApp(t)
  const client = await addClient(store, { redirectUris: [REDIRECT_URI, other] })
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  const issued = assertTokenSet(t, await callToken(app, codeParams(client, code)))
  assertTokenError(t, await callToken(app, refreshParams(client, issued.refresh_token, { redirect_uri: other })), 96004)
  assertTokenSet(t, await callToken(app, refreshParams(client, issued.refresh_token, { redirect_uri: `${REDIRECT_URI}?x=1` })))
})

t.test('a client-specific lifetime applies to refreshed tokens too', async (t) => {
  const { app, store } = await buildTestApp(t)
  const client = await addClient(store, { accessTokenTtl: 60 })
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  const issued = assertTokenSet(t, await callToken(app, codeParams(client, code)), { expiresIn: 60 })
  assertTokenSet(t, await callToken(app, refreshParams(client, issued.refresh_token)), { expiresIn: 60 })
})
