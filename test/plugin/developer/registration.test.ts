// Dynamic client registration end to end (RFC 7591/7592, contract §12): a standard client library
// (oauth4webapi) discovers the registration endpoint and registers with an operator's initial
// access token; the registered client signs a user in through the code grant with PKCE and signs
// a call to the open API; then RFC 7592 over plain HTTP manages the registration, on a second
// gateway instance sharing the Redis, and the deletion ends the client's tokens everywhere.
import { randomBytes } from 'node:crypto'
import * as oauth from 'oauth4webapi'
import t from 'tap'
import { createSignedFetch } from '../../../plugin/client/index.ts'
import { createRegistrationToken, type AuditEvent } from '../../../plugin/index.ts'
import { addUser, authorizeAndAllow, InjectBrowser } from '../../helpers/app.ts'
import { liveGateway } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'

const insecure = { [oauth.allowInsecureRequests]: true }
const mac = { recognizedTokenTypes: { mac: () => {} } }
const discovery = { ...insecure, algorithm: 'oauth2' as const }
const REDIRECT = 'https://dev-app.example/callback'

t.test('register with oauth4webapi, sign a user in, call the API; manage the registration on another instance', async (t) => {
  const redis = await startRedis(t)
  const secret = randomBytes(32).toString('base64url')
  const config = { registration: { mode: 'token' as const, scopes: ['1', '3'], defaultQuotaPerMinute: 120 } }
  const a = await liveGateway(t, redis, secret, config)
  const b = await liveGateway(t, redis, secret, config)
  const events: AuditEvent[] = []
  a.app.macgate.events.on('audit', (event) => events.push(event))
  b.app.macgate.events.on('audit', (event) => events.push(event))

  const issuer = new URL(a.origin)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, discovery))
  t.equal(as.registration_endpoint, `${a.origin}/oauth2/register`, 'advertised in the metadata')

  const { token: initialAccessToken, record } = await createRegistrationToken(a.store, { uses: 1 })
  // The metadata sent is what the answer must echo, with the unknown field left out (RFC 7591 §2).
  const metadata = {
    client_name: 'Dev App',
    redirect_uris: [REDIRECT],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: '1 3',
    client_uri: 'https://dev-app.example',
    logo_uri: 'https://dev-app.example/logo.png',
    contacts: ['dev@dev-app.example'],
    software_id: 'dev-app',
    software_version: '1.0.0'
  }
  const registered = await oauth.processDynamicClientRegistrationResponse(await oauth.dynamicClientRegistrationRequest(as, {
    ...metadata,
    tos_uri: 'https://dev-app.example/tos'
  }, { ...insecure, initialAccessToken }))
  t.match(registered, { ...metadata, client_secret_expires_at: 0 })
  t.notOk('tos_uri' in registered, 'an unknown field is not echoed')
  t.match(registered.client_id, /^[1-9][0-9]{18}$/, 'a macgate client id')
  t.type(registered.client_secret, 'string')
  t.type(registered.client_id_issued_at, 'number')
  const clientId = registered.client_id
  const registrationUri = registered.registration_client_uri as string
  const registrationToken = registered.registration_access_token as string
  t.equal(registrationUri, `${a.origin}/oauth2/register/${clientId}`)
  t.match(registrationToken, /^[A-Za-z0-9_-]{43}$/)

  const stored = (await a.store.getClient(clientId))!
  t.match(stored, { name: 'Dev App', quotaPerMinute: 120, selfRegistration: { via: 'token', initialTokenId: record.id } }, 'a client like any other, marked self-registered')
  t.notOk(JSON.stringify(stored).includes(registrationToken), 'the registration access token is kept only hashed')
  t.equal((await a.store.listRegistrationTokens()).length, 0, 'the one use is spent')

  // The code grant with PKCE, as the library does it; the consent page says the app is unverified.
  const client: oauth.Client = { client_id: clientId }
  const clientAuth = oauth.ClientSecretBasic(registered.client_secret as string)
  const codeVerifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const query = { client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', scope: '1 3', state, code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier), code_challenge_method: 'S256' }
  const user = await addUser(a.store)
  const browser = new InjectBrowser(a.app)
  await browser.signIn(user.username, user.password)
  const consent = await browser.get(`/oauth2/authorize?${new URLSearchParams(query).toString()}`)
  t.match(consent.body, /<h1>Authorize Dev App <small>\(unverified\)<\/small><\/h1>/, 'the name as the developer gave it, marked unverified')
  t.match(consent.body, /id="unverified"/)
  const callback = await authorizeAndAllow(browser, user, query)
  const parameters = oauth.validateAuthResponse(as, client, callback, state)
  const tokens = await oauth.processAuthorizationCodeResponse(as, client,
    await oauth.authorizationCodeGrantRequest(as, client, clientAuth, parameters, REDIRECT, codeVerifier, insecure), mac)
  t.match(tokens, { token_type: 'mac', scope: '1 3' })
  const api = createSignedFetch({ accessToken: tokens.access_token, macKey: tokens.mac_key as string })
  const profile = await api(`${b.origin}/user/openidV2`)
  t.equal(profile.status, 200, 'a signed call, verified by the other instance')

  // RFC 7592 over plain HTTP, on the other instance: the token works wherever the store is.
  const onB = registrationUri.replace(a.origin, b.origin)
  const bearer = { authorization: `Bearer ${registrationToken}` }
  const read = await fetch(onB, { headers: bearer })
  t.equal(read.status, 200)
  t.equal(read.headers.get('cache-control'), 'no-store')
  const readBody = await read.json() as Record<string, unknown>
  t.match(readBody, { client_id: clientId, client_name: 'Dev App', redirect_uris: [REDIRECT], registration_client_uri: `${b.origin}/oauth2/register/${clientId}` })
  t.notOk('client_secret' in readBody || 'registration_access_token' in readBody, 'neither secret is ever shown again')

  const put = await fetch(onB, {
    method: 'PUT',
    headers: { ...bearer, 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: clientId, client_secret: registered.client_secret, client_name: 'Dev App 2', redirect_uris: [REDIRECT, 'https://dev-app.example/cb2'], scope: '1' })
  })
  t.equal(put.status, 200)
  t.match(await put.json(), { client_id: clientId, client_name: 'Dev App 2', redirect_uris: [REDIRECT, 'https://dev-app.example/cb2'], scope: '1', grant_types: ['authorization_code', 'refresh_token'] })
  t.notOk('contacts' in (await (await fetch(registrationUri, { headers: bearer })).json() as object), 'PUT replaces: a field left out is gone')
  t.equal((await a.store.getClient(clientId))?.secretHash, stored.secretHash, 'the secret never changes by PUT')

  const deleted = await fetch(onB, { method: 'DELETE', headers: bearer })
  t.equal(deleted.status, 204)
  t.equal(await a.store.getClient(clientId), undefined, 'removed')
  t.equal((await api(`${a.origin}/user/openidV2`)).status, 401, 'its tokens are revoked')
  const after = await fetch(registrationUri, { headers: bearer })
  t.equal(after.status, 401, 'the registration access token died with it')
  t.match(after.headers.get('www-authenticate'), /^Bearer /)

  const clientEvents = events.filter((event) => event.type.startsWith('client.'))
  t.strictSame(clientEvents.map((event) => [event.type, 'by' in event ? event.by : undefined]), [
    ['client.registered', 'registration'], ['client.updated', 'registration'], ['client.removed', 'registration']
  ], 'each registration, update and deletion, by the developer')
  t.match(events.find((event) => event.type === 'client.registered'), { clientId, name: 'Dev App', via: 'token', initialTokenId: record.id, ip: '127.0.0.1' })
})
