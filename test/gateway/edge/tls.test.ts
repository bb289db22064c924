// TLS and HTTP/2 on the public listener (issue 29, section 1), over real TLS with certificates made
// here by openssl and clients that verify them: the flows over HTTP/2, HTTP/1.1 on the same port,
// plain HTTP beside, HTTP/2 to an HTTP/1.1 upstream, and the plugin on a user's own HTTP/2 app.
// The certificates: tls-certificates.test.ts; the timeouts and bounds: tls-limits.test.ts.
import { once } from 'node:events'
import { constants } from 'node:http2'
import { connect as tlsConnect } from 'node:tls'
import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { buildGateway } from '../../../gateway/index.ts'
import macgate, { MemoryStore } from '../../../plugin/index.ts'
import { parseTokenResponse, signRequest } from '../../../plugin/client/index.ts'
import { addClient, addUser, REDIRECT_URI } from '../../helpers/app.ts'
import { liveToken, type LiveTokens, recordingUpstream } from '../../helpers/gateway.ts'
import { H2Browser, h2Request } from '../../helpers/h2.ts'
import { eventually } from '../../helpers/live.ts'
import { hangingUpstream } from '../../helpers/faulty-upstream.ts'
import { ca, https1, main, session, signedHeaders, tlsGateway, withTestCa } from '../../helpers/tls-gateway.ts'

withTestCa(t)

t.test('over HTTP/2: sign-in, consent, both token endpoints, the RFC endpoints and a MAC-signed call', async (t) => {
  const { app, port, log } = await tlsGateway(t)
  const h2 = await session(t, port)
  t.equal(h2.alpnProtocol, 'h2', 'ALPN chose h2')
  const { clientId, clientSecret } = await addClient(app.macgate.store, { scope: '1 3' })
  const user = await addUser(app.macgate.store)
  const browser = new H2Browser(h2)
  const authorize = `/oauth2/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1 3' }).toString()}`

  const first = await browser.go(authorize)
  t.equal(first.status, 302, 'not signed in: to the sign-in page')
  const signInPage = await browser.go(first.headers.location as string)
  t.equal(signInPage.status, 200)
  t.equal(signInPage.headers['strict-transport-security'], 'max-age=31536000', 'the page sends HSTS')
  const signedIn = await browser.go('/oauth2/signin', { username: user.username, password: user.password, return_to: authorize })
  t.equal(signedIn.status, 303)
  t.ok(browser.setCookies.length > 0 && browser.setCookies.every((line) => /; Secure/i.test(line)), `session cookies are Secure over TLS without secureCookies: ${browser.setCookies.join(' | ')}`)
  const consent = await browser.go(authorize)
  t.equal(consent.status, 200)
  t.match(consent.body, user.username)
  const allowed = await browser.go(authorize, { decision: 'allow' })
  t.equal(allowed.status, 303)
  const code = new URL(allowed.headers.location as string).searchParams.get('code') ?? ''

  const tokenQuery = new URLSearchParams({ grant_type: 'authorization_code', client_id: clientId, client_secret: clientSecret, redirect_uri: REDIRECT_URI, code })
  const xiaomi = await h2Request(h2, { ':path': `/oauth2/token?${tokenQuery.toString()}` })
  t.equal(xiaomi.status, 200, 'the Xiaomi token endpoint')
  const tokens = parseTokenResponse(xiaomi.body)

  const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString()
  const post = { ':method': 'POST', 'content-type': 'application/x-www-form-urlencoded' }
  const refreshed = await h2Request(h2, { ...post, ':path': '/oauth2/rfc/token' }, form({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '', client_id: clientId, client_secret: clientSecret }))
  t.equal(refreshed.status, 200, `the RFC token endpoint: ${refreshed.body}`)
  const rfc = JSON.parse(refreshed.body) as { access_token: string, mac_key: string }
  const introspected = await h2Request(h2, { ...post, ':path': '/oauth2/introspect' }, form({ token: rfc.access_token, client_id: clientId, client_secret: clientSecret }))
  t.match(JSON.parse(introspected.body), { active: true, scope: '1 3' }, 'introspection')
  const metadata = await h2Request(h2, { ':path': '/.well-known/oauth-authorization-server' })
  t.equal(JSON.parse(metadata.body).issuer, `https://127.0.0.1:${port}`, 'the metadata\'s issuer: https and the listening address')

  const profile = await h2Request(h2, signedHeaders(port, '/user/profile', { accessToken: rfc.access_token, macKey: rfc.mac_key } as LiveTokens))
  t.equal(profile.status, 200, `a MAC-signed request over HTTP/2, bound to :authority: ${profile.body}`)
  t.equal(JSON.parse(profile.body).result, 'ok')
  t.notOk(profile.headers.connection, 'no connection header on an HTTP/2 answer')
  t.match(log.lines.find((line) => line.msg === 'request' && line.path === '/user/profile'), { method: 'GET', status: 200, client: clientId }, 'the access log line, with the client')

  const revoked = await h2Request(h2, { ...post, ':path': '/oauth2/revoke' }, form({ token: rfc.access_token, client_id: clientId, client_secret: clientSecret }))
  t.equal(revoked.status, 200, 'revocation')
})

t.test('HTTP/2: a Host header that differs from :authority is a 400 (RFC 9113 §8.3.1); an equal one is fine', async (t) => {
  const { port, token } = await tlsGateway(t)
  const tokens = await token()
  const h2 = await session(t, port)
  const signed = signedHeaders(port, '/user/profile', tokens)
  const twoHosts = await h2Request(h2, { ...signed, ':authority': `localhost:${port}`, host: 'api.example.com' })
  t.equal(twoHosts.status, 400)
  t.same(JSON.parse(twoHosts.body), { result: 'error', description: 'the Host header differs from :authority', code: 96002 }, 'in the open API\'s form')
  const page = await h2Request(h2, { ':path': '/oauth2/signin', ':authority': `localhost:${port}`, host: 'evil.example' })
  t.equal(page.status, 400, 'a page too')
  t.match(page.headers['content-type'], /text\/html/)
  const same = await h2Request(h2, { ...signedHeaders(port, '/user/profile', tokens), ':authority': `localhost:${port}`, host: `localhost:${port}` })
  t.equal(same.status, 200, 'a Host equal to :authority is accepted')
  const elsewhere = await h2Request(h2, { ...signedHeaders(port, '/user/profile', tokens), ':authority': 'api.example.com' })
  t.equal(elsewhere.status, 401, 'the signature binds :authority: signed for localhost, sent as api.example.com')
})

t.test('HTTP/1.1 over TLS on the same port, ALPN or none; "http2": false serves HTTP/1.1 alone', async (t) => {
  const both = await tlsGateway(t)
  const tokens = await both.token()
  const url = `https://localhost:${both.port}/user/profile`
  const answer = await https1(both.port, '/user/profile', { authorization: signRequest({ method: 'GET', url, accessToken: tokens.accessToken, macKey: tokens.macKey }) })
  t.equal(answer.status, 200, 'a signed HTTP/1.1 request over TLS (Host bound)')
  t.equal(answer.protocol, false, 'no ALPN offered: HTTP/1.1 all the same')
  t.equal(answer.headers['strict-transport-security'], 'max-age=31536000')

  const alone = await tlsGateway(t, { http2: false, hsts: { maxAgeSeconds: 600, includeSubDomains: true } })
  const plain = await https1(alone.port, '/health/live')
  t.equal(plain.status, 200)
  t.equal(plain.headers['strict-transport-security'], 'max-age=600; includeSubDomains', 'HSTS as configured')
  const offered = tlsConnect({ host: '127.0.0.1', port: alone.port, ca: ca.pem, servername: 'localhost', ALPNProtocols: ['h2'] })
  const [error] = await once(offered, 'error') as [NodeJS.ErrnoException]
  t.equal(error.code, 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL', 'a client offering h2 alone is refused: HTTP/1.1 only')

  const noHsts = await tlsGateway(t, { hsts: false })
  t.notOk((await https1(noHsts.port, '/health/live')).headers['strict-transport-security'], '"hsts": false sends none')
})

t.test('plain HTTP: no HSTS, and the session cookie is not Secure; nothing to renew', async (t) => {
  const store = new MemoryStore()
  const app = await buildGateway({ store })
  t.teardown(async () => { await app.close(); await store.close() })
  t.same(await app.reloadTls(), { renewed: [], kept: [] }, 'reloadTls without TLS: nothing to do')
  const page = await app.inject({ url: '/oauth2/signin' })
  t.notOk(page.headers['strict-transport-security'])
  const cookie = String(page.headers['set-cookie'] ?? '')
  t.ok(cookie !== '', 'the page sets its session cookie')
  t.notMatch(cookie, /Secure/i)
  const secured = await buildGateway({ store, config: { secureCookies: true } })
  t.teardown(async () => { await secured.close() })
  t.match(String((await secured.inject({ url: '/oauth2/signin' })).headers['set-cookie']), /; Secure/, 'secureCookies: Secure over plain HTTP (a TLS proxy in front)')
})

t.test('HTTP/2 in, HTTP/1.1 out: no pseudo-header or hop-by-hop header reaches the upstream, none of its own comes back', async (t) => {
  const upstream = await recordingUpstream(t)
  const { port, token } = await tlsGateway(t, { upstream: upstream.url, routes: [{ path: '/echo/*', methods: ['GET', 'POST'] }] })
  const tokens = await token()
  const h2 = await session(t, port)
  const url = `https://localhost:${port}/echo/x?a=1`
  const answer = await h2Request(h2, {
    ':method': 'POST',
    ':path': '/echo/x?a=1',
    authorization: signRequest({ method: 'POST', url, accessToken: tokens.accessToken, macKey: tokens.macKey }),
    'content-type': 'text/plain',
    te: 'trailers',
    'x-custom': 'kept'
  }, 'hello over h2')
  t.equal(answer.status, 200, answer.body)
  const received = upstream.requests[0]!
  t.equal(received.url, '/echo/x?a=1')
  t.equal(received.body, 'hello over h2', 'the body streamed through')
  t.same(Object.keys(received.headers).filter((name) => name.startsWith(':')), [], 'no pseudo-header upstream')
  t.notOk(received.headers.te, 'no TE upstream')
  t.equal(received.headers.host, upstream.url.slice('http://'.length), 'Host is the upstream\'s own')
  t.equal(received.headers['x-custom'], 'kept')
  t.equal(received.headers['x-forwarded-for'], '127.0.0.1')
  t.equal(received.headers['x-macgate-client-id'], tokens.clientId)
  t.notOk(answer.headers.connection ?? answer.headers['keep-alive'] ?? answer.headers['transfer-encoding'], 'the upstream\'s connection headers stay on its side')
})

t.test('HTTP/2: a stream the caller resets cancels its upstream request; the session goes on', async (t) => {
  const hanging = await hangingUpstream(t)
  const { port, token } = await tlsGateway(t, { upstream: hanging.url, routes: [{ path: '/hang', methods: ['GET'] }] })
  const tokens = await token()
  const h2 = await session(t, port)
  const stream = h2.request(signedHeaders(port, '/hang', tokens))
  stream.on('error', () => {})
  t.ok(await eventually(async () => hanging.received.length === 1, 5000, 10), 'the request reached the upstream')
  const leftAt = Date.now()
  stream.close(constants.NGHTTP2_CANCEL)
  t.ok(await eventually(async () => hanging.sockets[0]?.closedAt !== undefined, 2000, 10), 'the upstream saw its socket closed')
  t.ok(hanging.sockets[0]!.closedAt! - leftAt < 2000, `soon after the caller left (${hanging.sockets[0]!.closedAt! - leftAt} ms)`)
  t.equal((await h2Request(h2, { ':path': '/health/live' })).status, 200, 'the session is still good')
})

t.test('the demo\'s state cookie is Secure over TLS too, and not over plain HTTP', async (t) => {
  const store = new MemoryStore()
  const demo = { clientId: '1234567890123456789', clientSecret: 'unused', redirectUri: 'https://localhost/demo/callback' }
  const app = await buildGateway({ store, demo, config: { tls: [{ cert: main.cert, key: main.key }] } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const plain = await buildGateway({ store, demo })
  t.teardown(async () => { await app.close(); await plain.close(); await store.close() })
  const h2 = await session(t, (app.server.address() as { port: number }).port)
  const started = await h2Request(h2, { ':path': '/demo/start' })
  t.equal(started.status, 302)
  t.match(String(started.headers['set-cookie']), /macgate_demo_state=[^;]+;.*Secure/)
  t.notMatch(String((await plain.inject({ url: '/demo/start' })).headers['set-cookie']), /Secure/)
})

t.test('macAuth on a user\'s own HTTP/2 Fastify app: :authority bound, a differing Host refused by the hook itself', async (t) => {
  const store = new MemoryStore()
  const app = Fastify({ http2: true, https: { allowHTTP1: true, cert: main.certPem, key: main.keyPem } }) as unknown as FastifyInstance
  t.teardown(async () => { await app.close(); await store.close() })
  await app.register(macgate, { store })
  app.get('/mine', { onRequest: app.macAuth({ scopes: ['1'] }) }, async (request) => request.macIdentity)
  const tokens = await liveToken(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  const h2 = await session(t, port)
  t.equal((await h2Request(h2, signedHeaders(port, '/mine', tokens))).status, 200, 'signed for :authority')
  const twoHosts = await h2Request(h2, { ...signedHeaders(port, '/mine', tokens), ':authority': `localhost:${port}`, host: 'api.example.com' })
  t.equal(twoHosts.status, 400)
  t.same(JSON.parse(twoHosts.body), { result: 'error', description: 'the Host header differs from :authority', code: 96002 })
})
