// A standard OAuth client library (panva's oauth4webapi, strict about RFC 6749, 8414, 7009 and
// 7662) used as an app would, pointed only at the issuer URL: discovery, the code grant with PKCE,
// the code exchange, refresh, introspection, revocation; the tokens sign calls to the open API with
// macgate/client. The one adaptation is naming the `mac` token type (`recognizedTokenTypes`);
// discovery is the library's RFC 8414 algorithm (`oauth2`), macgate being no OpenID provider.
import { randomBytes } from 'node:crypto'
import * as oauth from 'oauth4webapi'
import t from 'tap'
import { createSignedFetch } from '../../../plugin/client/index.ts'
import { addClient, addPublicClient, addUser, authorizeAndAllow, InjectBrowser, REDIRECT_URI, SPA_REDIRECT_URI } from '../../helpers/app.ts'
import { liveGateway, pollUntilRefused, signedGet } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'

const redis = await startRedis(t)
const gateway = await liveGateway(t, redis, randomBytes(32).toString('base64url'))

// The test's gateway listens on plain HTTP on loopback; a deployment's issuer is https.
const insecure = { [oauth.allowInsecureRequests]: true }
const mac = { recognizedTokenTypes: { mac: () => {} } }
// RFC 8414 discovery (the library's default is OpenID Connect's, which an OAuth-only server has not).
const discovery = { ...insecure, algorithm: 'oauth2' as const }

interface Registered { clientId: string, redirectUri: string, clientAuth: oauth.ClientAuth }

/** A confidential client with its secret, or a public one (a browser app) by its client_id alone. */
const REGISTRATIONS: Array<[string, () => Promise<Registered>]> = [
  ['client_secret_basic', async () => {
    const { clientId, clientSecret } = await addClient(gateway.store)
    return { clientId, redirectUri: REDIRECT_URI, clientAuth: oauth.ClientSecretBasic(clientSecret) }
  }],
  ['client_secret_post', async () => {
    const { clientId, clientSecret } = await addClient(gateway.store)
    return { clientId, redirectUri: REDIRECT_URI, clientAuth: oauth.ClientSecretPost(clientSecret) }
  }],
  ['none', async () => {
    const { clientId } = await addPublicClient(gateway.store)
    return { clientId, redirectUri: SPA_REDIRECT_URI, clientAuth: oauth.None() }
  }]
]

for (const [method, register] of REGISTRATIONS) {
  t.test(`oauth4webapi with ${method}: sign-in, tokens, refresh, introspection, revocation, signed calls`, async (t) => {
    const { clientId, redirectUri, clientAuth } = await register()
    const client: oauth.Client = { client_id: clientId }

    // Discovery from the issuer URL alone.
    const issuer = new URL(gateway.origin)
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, discovery))
    t.equal(as.token_endpoint, `${gateway.origin}/oauth2/rfc/token`)
    t.ok(as.token_endpoint_auth_methods_supported?.includes(method), `${method} advertised`)

    // The authorization request as the library builds it; the user signs in and allows.
    const codeVerifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const authorizationUrl = new URL(as.authorization_endpoint!)
    authorizationUrl.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: '1 3',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256'
    }).toString()
    const user = await addUser(gateway.store)
    const callback = await authorizeAndAllow(new InjectBrowser(gateway.app), user, Object.fromEntries(authorizationUrl.searchParams))
    const callbackParameters = oauth.validateAuthResponse(as, client, callback, state)

    // The code exchange.
    const exchanged = await oauth.processAuthorizationCodeResponse(as, client,
      await oauth.authorizationCodeGrantRequest(as, client, clientAuth, callbackParameters, redirectUri, codeVerifier, insecure), mac)
    t.match(exchanged, { token_type: 'mac', scope: '1 3', expires_in: 7_776_000, mac_algorithm: 'HmacSha1' })
    t.type(exchanged.refresh_token, 'string')
    const first = { access_token: exchanged.access_token, mac_key: exchanged.mac_key as string }
    const api = createSignedFetch({ accessToken: exchanged.access_token, macKey: exchanged.mac_key as string, macAlgorithm: exchanged.mac_algorithm as string })
    const openId = await api(`${gateway.origin}/user/openidV2`)
    t.equal(openId.status, 200, 'the open API serves the token')
    t.match(await openId.json(), { result: 'ok', data: { openid: exchanged.openId } }, 'as the user the token was issued for')

    // Introspection describes it (to a confidential client: it is for resource servers, contract §11).
    const introspect = async (token: string) => await oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, clientAuth, token, insecure))
    if (method === 'none') {
      await t.rejects(introspect(exchanged.access_token), { name: 'ResponseBodyError', error: 'unauthorized_client', status: 400 }, 'a public client may not introspect')
    } else {
      t.match(await introspect(exchanged.access_token), { active: true, client_id: clientId, scope: '1 3', token_type: 'mac', sub: exchanged.openId })
    }

    // Refresh: new tokens that work, the old access token refused.
    const refreshed = await oauth.processRefreshTokenResponse(as, client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, exchanged.refresh_token!, insecure), mac)
    t.not(refreshed.access_token, exchanged.access_token, 'a new access token')
    t.equal(refreshed.openId, exchanged.openId, 'the same openId')
    const second = { access_token: refreshed.access_token, mac_key: refreshed.mac_key as string }
    t.equal((await signedGet(gateway.origin, '/user/profile', second)).status, 200, 'the refreshed token is served')
    t.equal((await signedGet(gateway.origin, '/user/profile', first)).status, 401, 'the rotated-out token is refused')

    // Revocation of the refresh token ends the grant.
    const since = Date.now()
    t.equal(await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, refreshed.refresh_token!, insecure)), undefined)
    const { last } = await pollUntilRefused(gateway.origin, '/user/profile', second, since)
    t.equal(last.status, 401, 'the grant\'s access token is refused after the revocation')
    if (method !== 'none') t.equal((await introspect(refreshed.access_token)).active, false, 'introspection agrees')

    // A spent refresh token: the library surfaces the RFC error.
    const spent = await oauth.refreshTokenGrantRequest(as, client, clientAuth, exchanged.refresh_token!, insecure)
    await t.rejects(oauth.processRefreshTokenResponse(as, client, spent, mac), { name: 'ResponseBodyError', error: 'invalid_grant', status: 400 })
  })
}

t.test('oauth4webapi reads a failed client authentication: 401 with the Basic challenge, invalid_client', async (t) => {
  const { clientId } = await addClient(gateway.store)
  const client: oauth.Client = { client_id: clientId }
  const issuer = new URL(gateway.origin)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, discovery))
  const response = await oauth.refreshTokenGrantRequest(as, client, oauth.ClientSecretBasic('wrong'), 'any', insecure)
  const failure = await oauth.processRefreshTokenResponse(as, client, response, mac).then(() => undefined, (error: unknown) => error)
  t.ok(failure instanceof oauth.WWWAuthenticateChallengeError, 'the library reports the 401\'s challenge')
  const { cause, status, response: answer } = failure as oauth.WWWAuthenticateChallengeError
  t.equal(status, 401)
  t.match(cause, [{ scheme: 'basic', parameters: { realm: 'macgate' } }], 'Basic, realm macgate')
  t.strictSame(await answer.json(), { error: 'invalid_client', error_description: 'client authentication failed' }, 'the body in RFC form')
})
