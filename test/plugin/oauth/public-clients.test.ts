// Public clients (RFC 6749 §2.1, RFC 9700 §2.1.1; contract §11): no secret, PKCE required, the code
// and refresh token redeemed by client_id alone, never in place of a confidential client.
import { createHash, randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import {
  addClient, addPublicClient, addUser, authorizeAndAllow, buildTestApp, callToken, InjectBrowser, REDIRECT_URI, SPA_REDIRECT_URI
} from '../../helpers/app.ts'
import { assertTokenError, assertTokenSet, codeParams } from '../../helpers/token-checks.ts'
import { grantCode } from '../../../plugin/index.ts'

const STORES = ['memory', 'redis'] as const

function pkce (): { verifier: string, challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

/** A code for the client through the pages, with a PKCE challenge unless `challenge` is false. */
async function codeFor (app: FastifyInstance, clientId: string, redirectUri: string, { challenge = true } = {}) {
  const browser = new InjectBrowser(app)
  const user = await addUser(app.macgate.store)
  const { verifier, challenge: codeChallenge } = pkce()
  const location = await authorizeAndAllow(browser, user, {
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: '1 3',
    ...(challenge && { code_challenge: codeChallenge, code_challenge_method: 'S256' })
  })
  return { code: location.searchParams.get('code'), verifier, location }
}

function publicCodeParams (clientId: string, code: string, verifier: string): Record<string, string> {
  return { grant_type: 'authorization_code', client_id: clientId, redirect_uri: SPA_REDIRECT_URI, code, code_verifier: verifier }
}

async function setup (t: Test, kind: 'memory' | 'redis' = 'memory') {
  const { app, store } = await buildTestApp(t, { store: kind })
  return { app, store, spa: await addPublicClient(store), confidential: await addClient(store) }
}

for (const kind of STORES) {
  t.test(`${kind}: a public client redeems its code with client_id and code_verifier, refreshes by rotation, and a reuse revokes the grant`, async (t) => {
    const { app, spa } = await setup(t, kind)
    const { code, verifier } = await codeFor(app, spa.clientId, SPA_REDIRECT_URI)
    const tokens = assertTokenSet(t, await callToken(app, publicCodeParams(spa.clientId, code!, verifier), { method: 'POST' }))

    const refresh = { grant_type: 'refresh_token', client_id: spa.clientId, redirect_uri: SPA_REDIRECT_URI, refresh_token: tokens.refresh_token }
    const rotated = assertTokenSet(t, await callToken(app, refresh, { method: 'POST' }))
    t.not(rotated.refresh_token, tokens.refresh_token, 'a new refresh token')
    assertTokenError(t, await callToken(app, refresh, { method: 'POST' }), 96009)
    assertTokenError(t, await callToken(app, { ...refresh, refresh_token: rotated.refresh_token }, { method: 'POST' }), 96009)
  })
}

t.test('a public client must use PKCE: no challenge is refused at authorize, no verifier at the token endpoint', async (t) => {
  const { app, spa } = await setup(t)
  const without = await codeFor(app, spa.clientId, SPA_REDIRECT_URI, { challenge: false })
  t.equal(without.code, null, 'no code')
  t.equal(without.location.searchParams.get('error'), '96002', 'code_challenge is required')

  const { code, verifier } = await codeFor(app, spa.clientId, SPA_REDIRECT_URI)
  const { code_verifier: _verifier, ...noVerifier } = publicCodeParams(spa.clientId, code!, verifier)
  assertTokenError(t, await callToken(app, noVerifier, { method: 'POST' }), 96004, 400, 'code_verifier is required')
  assertTokenError(t, await callToken(app, { ...noVerifier, code_verifier: pkce().verifier }, { method: 'POST' }), 96004, 400, 'code_verifier does not match')
  assertTokenSet(t, await callToken(app, publicCodeParams(spa.clientId, code!, verifier), { method: 'POST' }), { scope: '1 3' })

  // A code issued to it without a challenge (an operator's grantCode) is not redeemed at all.
  const seeded = await grantCode(app.macgate, { clientId: spa.clientId, userId: 'u1', scope: ['1'], redirectUri: SPA_REDIRECT_URI })
  const { code_verifier: _none, ...seededParams } = publicCodeParams(spa.clientId, seeded, verifier)
  assertTokenError(t, await callToken(app, seededParams, { method: 'POST' }), 96004, 400, 'a public client\'s code needs a code_challenge')
})

t.test("a public client's code is not redeemed with a confidential client's parameters, nor the reverse", async (t) => {
  const { app, spa, confidential } = await setup(t)
  const spaCode = await codeFor(app, spa.clientId, SPA_REDIRECT_URI)
  const asConfidential = { ...codeParams(confidential, spaCode.code!), code_verifier: spaCode.verifier }
  assertTokenError(t, await callToken(app, { ...asConfidential, redirect_uri: REDIRECT_URI }, { method: 'POST' }), 96004)

  const confidentialCode = await codeFor(app, confidential.clientId, REDIRECT_URI)
  // The public client's id with the confidential client's code (and its redirect URI: 96010 first).
  const asPublic = { grant_type: 'authorization_code', client_id: spa.clientId, redirect_uri: SPA_REDIRECT_URI, code: confidentialCode.code!, code_verifier: confidentialCode.verifier }
  assertTokenError(t, await callToken(app, asPublic, { method: 'POST' }), 96004)
  // The confidential client's id without its secret: as before public clients, 96002.
  const { client_secret: _secret, ...noSecret } = codeParams(confidential, confidentialCode.code!, { code_verifier: confidentialCode.verifier })
  assertTokenError(t, await callToken(app, noSecret, { method: 'POST' }), 96002, 400, 'client_secret is missing')
  // A secret sent for the public client: it has none to match.
  assertTokenError(t, await callToken(app, { ...publicCodeParams(spa.clientId, spaCode.code!, spaCode.verifier), client_secret: confidential.clientSecret }, { method: 'POST' }), 96003, 401)
  // An unknown client_id without a secret: 96002 as before.
  assertTokenError(t, await callToken(app, { ...publicCodeParams('1000000000000000000', spaCode.code!, spaCode.verifier) }, { method: 'POST' }), 96002)

  // None of the refusals spent either code.
  assertTokenSet(t, await callToken(app, publicCodeParams(spa.clientId, spaCode.code!, spaCode.verifier), { method: 'POST' }))
  assertTokenSet(t, await callToken(app, { ...codeParams(confidential, confidentialCode.code!), code_verifier: confidentialCode.verifier }))
})

t.test("the Xiaomi GET form stays the confidential clients': a public client posts", async (t) => {
  const { app, spa } = await setup(t)
  const { code, verifier } = await codeFor(app, spa.clientId, SPA_REDIRECT_URI)
  assertTokenError(t, await callToken(app, publicCodeParams(spa.clientId, code!, verifier)), 96002, 400, 'a public client uses POST')
  assertTokenSet(t, await callToken(app, publicCodeParams(spa.clientId, code!, verifier), { method: 'POST' }))
})

t.test('a public client gets the implicit grant only when registered for it', async (t) => {
  const { app, store, spa } = await setup(t)
  const implicit = await addPublicClient(store, { responseTypes: ['code', 'token'] })
  const browser = new InjectBrowser(app)
  const user = await addUser(store)
  const refused = await authorizeAndAllow(browser, user, { client_id: spa.clientId, redirect_uri: SPA_REDIRECT_URI, response_type: 'token' })
  t.equal(refused.searchParams.get('error'), '96005', 'code only by default')
  const granted = await authorizeAndAllow(browser, user, { client_id: implicit.clientId, redirect_uri: SPA_REDIRECT_URI, response_type: 'token', scope: '1' })
  const fragment = new URLSearchParams(granted.hash.slice(1))
  t.match(fragment.get('access_token'), /\./, 'a token in the fragment')
  t.ok(fragment.get('mac_key'), 'and its mac_key')
})

t.test('revocation takes a public client by client_id, for its own tokens; introspection does not take one', async (t) => {
  const { app, spa, confidential } = await setup(t)
  const { code, verifier } = await codeFor(app, spa.clientId, SPA_REDIRECT_URI)
  const tokens = assertTokenSet(t, await callToken(app, publicCodeParams(spa.clientId, code!, verifier), { method: 'POST' }))
  const form = async (url: string, params: Record<string, string>) => {
    const response = await app.inject({ method: 'POST', url, payload: new URLSearchParams(params).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    return { status: response.statusCode, body: response.json() as Record<string, unknown> }
  }
  const introspect = async (token: string) => await form('/oauth2/introspect', { client_id: confidential.clientId, client_secret: confidential.clientSecret, token })

  t.strictSame(await form('/oauth2/introspect', { client_id: spa.clientId, token: tokens.access_token }), {
    status: 400, body: { error: 'unauthorized_client', error_description: 'a public client cannot use this endpoint' }
  }, 'introspection is for resource servers')
  t.equal((await form('/oauth2/revoke', { client_id: spa.clientId, client_secret: 'guess', token: tokens.access_token })).status, 401, 'a secret sent for a public client is refused')

  // Another client's revocation leaves the token alone; the public client's own revokes it.
  t.equal((await form('/oauth2/revoke', { client_id: confidential.clientId, client_secret: confidential.clientSecret, token: tokens.access_token })).status, 200)
  const refresh = { grant_type: 'refresh_token', client_id: spa.clientId, redirect_uri: SPA_REDIRECT_URI, refresh_token: tokens.refresh_token }
  t.strictSame(await form('/oauth2/revoke', { client_id: spa.clientId, token: tokens.access_token }), { status: 200, body: {} })
  t.strictSame((await introspect(tokens.access_token)).body, { active: false }, 'the access token is revoked')
  assertTokenError(t, await callToken(app, refresh, { method: 'POST' }), 96009)
})

t.test('discovery names the public clients\' authentication method', async (t) => {
  const { app } = await setup(t)
  const metadata = (await app.inject('/.well-known/oauth-authorization-server')).json() as Record<string, string[]>
  t.strictSame(metadata.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'none'])
  t.strictSame(metadata.revocation_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'none'])
  t.strictSame(metadata.introspection_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post'])
})
