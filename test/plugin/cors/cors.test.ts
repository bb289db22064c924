// CORS (contract §11): browser apps on their own origins calling the open API with MAC tokens, and
// public clients' apps calling the token and revocation endpoints. Through fastify.inject; the
// browser's own view is test/spa-browser (20b).
import { createHash, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { addClient, addPublicClient, addUser, authorizeAndAllow, buildTestApp, callToken, InjectBrowser, SPA_ORIGIN, SPA_REDIRECT_URI } from '../../helpers/app.ts'
import { API_HOST, buildTestGateway, liveToken, nonceAt, signedInject } from '../../helpers/gateway.ts'
import { eventually } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'
import { RedisStore } from '../../../plugin/store/redis/redis-store.ts'
import { registerClient, ScopeRegistry } from '../../../plugin/index.ts'

/** The confidential test client's redirect URI is https://app.example.com/callback. */
const APP_ORIGIN = 'https://app.example.com'
const STRANGER = 'https://evil.example'

function preflight (app: FastifyInstance, url: string, origin: string | undefined, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'OPTIONS',
    url,
    headers: { host: API_HOST, ...(origin !== undefined && { origin }), 'access-control-request-method': 'GET', ...headers }
  })
}

function corsHeaders (response: LightMyRequestResponse): Record<string, unknown> {
  return Object.fromEntries(Object.entries(response.headers).filter(([name]) => name.startsWith('access-control-')))
}

function assertReadable (t: Test, response: LightMyRequestResponse, origin: string, label: string): void {
  t.equal(response.headers['access-control-allow-origin'], origin, `${label}: readable from ${origin}`)
  t.equal(response.headers['access-control-expose-headers'], 'WWW-Authenticate, Retry-After, RateLimit, RateLimit-Policy', `${label}: the refusal's headers exposed`)
  t.match(response.headers.vary, /\bOrigin\b/, `${label}: Vary: Origin`)
}

function assertNotReadable (t: Test, response: LightMyRequestResponse, label: string): void {
  t.strictSame(Object.keys(corsHeaders(response)).filter((name) => name.startsWith('access-control-allow-')), [], `${label}: no Access-Control-Allow-* header`)
  t.match(response.headers.vary, /\bOrigin\b/, `${label}: Vary: Origin all the same`)
}

t.test('a preflight is answered before the MAC check: 204, the route\'s methods, the headers a call may send; no nonce spent', async (t) => {
  const { app } = await buildTestGateway(t)
  const live = await liveToken(app)
  const nonce = nonceAt()
  const requested = 'X-Trace-Id, authorization, X-MacGate-User-Id, X_MACGATE_SCOPE, X-HTTP-Method-Override, Connection, X-Forwarded-For, content-type, bad header'
  const signedPreflight = await signedInject(app, { method: 'OPTIONS', url: '/user/profile', token: live.accessToken, macKey: live.macKey, nonce, headers: { origin: APP_ORIGIN, 'access-control-request-method': 'GET', 'access-control-request-headers': requested } })
  t.equal(signedPreflight.statusCode, 204)
  t.equal(signedPreflight.body, '')
  t.strictSame(corsHeaders(signedPreflight), {
    'access-control-allow-methods': 'GET',
    'access-control-allow-headers': 'authorization, content-type, x-trace-id',
    'access-control-max-age': '600',
    'access-control-allow-origin': APP_ORIGIN,
    'access-control-expose-headers': 'WWW-Authenticate, Retry-After, RateLimit, RateLimit-Policy'
  }, 'never an identity, forwarding, hop-by-hop or method-override header')
  t.match(signedPreflight.headers.vary, /\bOrigin\b/)

  // The preflight (which even carried a signature) spent nothing: the same nonce still verifies once.
  const call = await signedInject(app, { url: '/user/profile', token: live.accessToken, macKey: live.macKey, nonce, headers: { origin: APP_ORIGIN } })
  t.equal(call.statusCode, 200, 'the nonce was unspent')
  assertReadable(t, call, APP_ORIGIN, 'the verified answer for its own client')
  const replay = await signedInject(app, { url: '/user/profile', token: live.accessToken, macKey: live.macKey, nonce, headers: { origin: APP_ORIGIN } })
  t.equal(replay.statusCode, 401, 'spent by the call itself')
  assertReadable(t, replay, APP_ORIGIN, 'a refusal')
})

t.test('allowed and disallowed origins; a verified answer only for the token\'s own client', async (t) => {
  const { app, store } = await buildTestGateway(t)
  const live = await liveToken(app)
  const spa = await addPublicClient(store, { allowedOrigins: ['http://localhost:5173'] })
  t.ok(spa.clientId, 'another client with other origins')

  assertNotReadable(t, await preflight(app, '/user/profile', STRANGER), 'an origin no client registered')
  t.equal((await preflight(app, '/user/profile', STRANGER)).statusCode, 204, 'still answered here, not by the MAC check')
  assertNotReadable(t, await preflight(app, '/user/profile', 'null'), 'the opaque origin null')
  for (const origin of [SPA_ORIGIN, 'http://localhost:5173', APP_ORIGIN]) {
    assertReadable(t, await preflight(app, '/user/profile', origin), origin, `preflight from ${origin}`)
  }

  const signed = async (origin: string) => await signedInject(app, { url: '/user/profile', token: live.accessToken, macKey: live.macKey, headers: { origin } })
  const own = await signed(APP_ORIGIN)
  t.equal(own.statusCode, 200)
  assertReadable(t, own, APP_ORIGIN, 'own client')
  const other = await signed(SPA_ORIGIN)
  t.equal(other.statusCode, 200, 'verified and served')
  assertNotReadable(t, other, "another client's origin cannot read what this token fetched")
  assertNotReadable(t, await signed(STRANGER), 'an unknown origin')

  // Every refusal of a configured route is readable from any allowed origin.
  const unsigned = await app.inject({ url: '/user/profile', headers: { host: API_HOST, origin: SPA_ORIGIN } })
  t.equal(unsigned.statusCode, 401)
  assertReadable(t, unsigned, SPA_ORIGIN, '401')
  t.match(unsigned.headers['www-authenticate'], /^MAC/, 'with the WWW-Authenticate it exposes')
  const wrongMethod = await app.inject({ method: 'POST', url: '/user/profile', headers: { host: API_HOST, origin: SPA_ORIGIN } })
  t.equal(wrongMethod.statusCode, 405)
  assertReadable(t, wrongMethod, SPA_ORIGIN, '405')
  const scopeless = await liveToken(app, { clientScope: '1', scope: '1' })
  const forbidden = await signedInject(app, { url: '/user/phoneAndEmail', token: scopeless.accessToken, macKey: scopeless.macKey, headers: { origin: APP_ORIGIN } })
  t.equal(forbidden.statusCode, 403)
  t.equal(forbidden.headers['access-control-allow-origin'], APP_ORIGIN, '403 readable')
  assertNotReadable(t, await app.inject({ url: '/user/profile', headers: { host: API_HOST, origin: STRANGER } }), 'a refusal for an unknown origin')

  // A path no route has: no CORS, OPTIONS included.
  const nowhere = await preflight(app, '/nowhere', SPA_ORIGIN)
  t.equal(nowhere.statusCode, 404, 'OPTIONS to a path no route has stays 404')
  t.strictSame(corsHeaders(nowhere), {}, 'without CORS headers')

  // Without an Origin, nothing changes: a plain OPTIONS is the route's 405.
  const plain = await app.inject({ method: 'OPTIONS', url: '/user/profile', headers: { host: API_HOST } })
  t.equal(plain.statusCode, 405)
  t.strictSame(corsHeaders(plain), {})
  t.equal(plain.headers.vary, undefined, 'no Vary either')
})

t.test('an upstream\'s own CORS headers never reach the browser: the gateway decides', async (t) => {
  const upstream = createServer((_request, response) => {
    response.setHeader('access-control-allow-origin', '*')
    response.setHeader('vary', 'Accept-Encoding')
    response.setHeader('content-type', 'application/json')
    response.end('{"result":"ok","description":"success","data":{},"code":0}')
  }).listen(0, '127.0.0.1')
  await once(upstream, 'listening')
  t.teardown(() => { upstream.close() })
  const { port } = upstream.address() as { port: number }
  const { app } = await buildTestGateway(t, { config: { upstream: `http://127.0.0.1:${port}`, routes: [{ path: '/api/*', methods: ['GET'], scopes: [], match: 'all' }] } })
  const live = await liveToken(app)
  const foreign = await signedInject(app, { url: '/api/x', token: live.accessToken, macKey: live.macKey, headers: { origin: STRANGER } })
  t.equal(foreign.statusCode, 200)
  t.equal(foreign.headers['access-control-allow-origin'], undefined, 'the upstream\'s * is dropped')
  t.equal(foreign.headers.vary, 'Accept-Encoding, Origin', 'its Vary kept, Origin added')
  const own = await signedInject(app, { url: '/api/x', token: live.accessToken, macKey: live.macKey, headers: { origin: APP_ORIGIN } })
  t.equal(own.headers['access-control-allow-origin'], APP_ORIGIN)
})

t.test('"cors": false: no CORS header anywhere, OPTIONS as before', async (t) => {
  const { app, store } = await buildTestGateway(t, { config: { cors: false } })
  await addPublicClient(store)
  const live = await liveToken(app)
  const gone = await preflight(app, '/user/profile', APP_ORIGIN)
  t.equal(gone.statusCode, 405, 'the route\'s 405')
  t.strictSame(corsHeaders(gone), {})
  const call = await signedInject(app, { url: '/user/profile', token: live.accessToken, macKey: live.macKey, headers: { origin: APP_ORIGIN } })
  t.equal(call.statusCode, 200)
  t.strictSame(corsHeaders(call), {})
  const token = await app.inject({ method: 'OPTIONS', url: '/oauth2/token', headers: { origin: SPA_ORIGIN, 'access-control-request-method': 'POST' } })
  t.equal(token.statusCode, 405)
  t.strictSame(corsHeaders(token), {})
})

async function publicCode (app: FastifyInstance, clientId: string) {
  const verifier = randomBytes(32).toString('base64url')
  const location = await authorizeAndAllow(new InjectBrowser(app), await addUser(app.macgate.store), {
    client_id: clientId,
    redirect_uri: SPA_REDIRECT_URI,
    response_type: 'code',
    scope: '1',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256'
  })
  return { grant_type: 'authorization_code', client_id: clientId, redirect_uri: SPA_REDIRECT_URI, code: location.searchParams.get('code')!, code_verifier: verifier }
}

t.test('the token endpoint: CORS for public clients\' origins only; a success only for its own client\'s', async (t) => {
  const { app, store } = await buildTestApp(t)
  const spa = await addPublicClient(store)
  const other = await addPublicClient(store, { redirectUris: ['https://other-spa.example/cb'] })
  await addClient(store)
  const tokenPreflight = async (origin?: string) => await app.inject({ method: 'OPTIONS', url: '/oauth2/token', headers: { ...(origin !== undefined && { origin }), 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } })

  const ok = await tokenPreflight(SPA_ORIGIN)
  t.equal(ok.statusCode, 204, 'a public client\'s origin: 204')
  t.strictSame(corsHeaders(ok), {
    'access-control-allow-methods': 'POST',
    'access-control-allow-headers': 'content-type',
    'access-control-max-age': '600',
    'access-control-allow-origin': SPA_ORIGIN,
    'access-control-expose-headers': 'WWW-Authenticate, Retry-After, RateLimit, RateLimit-Policy'
  })
  for (const [origin, label] of [[APP_ORIGIN, 'a confidential client\'s origin'], [STRANGER, 'an unknown origin'], [undefined, 'no Origin']] as const) {
    const refused = await tokenPreflight(origin)
    t.equal(refused.statusCode, 405, `${label}: 405 as before`)
    t.equal(refused.headers.allow, 'GET, POST')
    t.equal(refused.headers['access-control-allow-origin'], undefined, `${label}: no CORS`)
  }

  const params = await publicCode(app, spa.clientId)
  const fromOther = await callToken(app, params, { method: 'POST', headers: { origin: 'https://other-spa.example' } })
  t.equal(fromOther.status, 200, 'issued (the code and verifier are what count)')
  t.equal(fromOther.headers['access-control-allow-origin'], undefined, 'but another client\'s page cannot read it')
  t.ok(other.clientId)
  const fromOwn = await callToken(app, await publicCode(app, spa.clientId), { method: 'POST', headers: { origin: SPA_ORIGIN } })
  t.equal(fromOwn.status, 200)
  t.equal(fromOwn.headers['access-control-allow-origin'], SPA_ORIGIN, 'its own page reads its tokens')
  t.match(fromOwn.headers.vary, /Origin/)

  const refused = await callToken(app, { ...params, code: 'nope' }, { method: 'POST', headers: { origin: SPA_ORIGIN } })
  t.equal(refused.status, 400)
  t.equal(refused.headers['access-control-allow-origin'], SPA_ORIGIN, 'a refusal is readable, so the app reads its code')
  const confidentialOrigin = await callToken(app, { ...params, code: 'nope' }, { method: 'POST', headers: { origin: APP_ORIGIN } })
  t.equal(confidentialOrigin.headers['access-control-allow-origin'], undefined, 'never for a confidential client\'s origin')
  t.match(confidentialOrigin.headers.vary, /Origin/)

  // Revocation: the same rule.
  const tokens = fromOwn.body as Record<string, string>
  const revoked = await app.inject({ method: 'POST', url: '/oauth2/revoke', payload: new URLSearchParams({ client_id: spa.clientId, token: tokens.access_token! }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', origin: SPA_ORIGIN } })
  t.equal(revoked.statusCode, 200)
  t.equal(revoked.headers['access-control-allow-origin'], SPA_ORIGIN)
})

t.test('Redis: an origin registered through another instance is allowed here within the cache time', async (t) => {
  const redis = await startRedis(t)
  const { app } = await buildTestApp(t, { store: 'redis', redis, corsOriginCacheMs: 200 })
  const other = await new RedisStore(redis.url, { prefix: redis.prefix }).connect()
  t.teardown(async () => await other.close())
  const origin = 'https://late.example'
  assertNotReadable(t, await preflight(app, '/user/profile', origin), 'not yet registered (and remembered as such)')
  await registerClient(other, new ScopeRegistry(), { name: 'Late', redirectUris: [`${origin}/cb`] })
  t.ok(await eventually(async () => (await preflight(app, '/user/profile', origin)).headers['access-control-allow-origin'] === origin, 5000, 50), 'allowed once the cached answer expires')

  await redis.stop()
  const outage = await preflight(app, '/user/profile', 'https://uncached.example')
  t.equal(outage.statusCode, 503, 'a store outage while looking an origin up: the open API\'s 503')
  t.equal(outage.json().code, 96000)
})
