// TLS and HTTP/2 on the public listener (issue 29, section 1), over real TLS with certificates made
// here by openssl and clients that verify them: Node's http2 client, https, tls.connect, and
// Debian's openssl s_client for what Node's client can no longer offer (TLS 1.1).
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { copyFile, rm, writeFile } from 'node:fs/promises'
import { request as httpsRequest, type Agent } from 'node:https'
import { constants, type ClientHttp2Session } from 'node:http2'
import { connect as netConnect } from 'node:net'
import { connect as tlsConnect, type TLSSocket } from 'node:tls'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { buildGateway, parseConfig, type GatewayConfig } from '../gateway/server.ts'
import macgate, { MemoryStore } from '../plugin/index.ts'
import { parseTokenResponse, signRequest } from '../plugin/client/index.ts'
import { addClient, addUser, REDIRECT_URI } from './helpers/app.ts'
import { testCa, serialOf, type ServerCert, type TestCa } from './helpers/certs.ts'
import { liveToken, recordingUpstream, type LiveTokens } from './helpers/gateway.ts'
import { H2Browser, h2Request, h2Session } from './helpers/h2.ts'
import { eventually } from './helpers/live.ts'
import { memoryLog } from './helpers/memory-log.ts'
import { hangingUpstream, httpUpstream } from './helpers/faulty-upstream.ts'
import { runInProcess } from './helpers/in-process.ts'
import { cliEnv } from './helpers/cli.ts'

const run = promisify(execFile)

let ca: TestCa
let main: ServerCert
t.before(async () => {
  ca = await testCa(t.testdir())
  main = await ca.issue('main', ['localhost', '127.0.0.1'])
})

interface TlsGateway {
  app: FastifyInstance
  port: number
  log: ReturnType<typeof memoryLog>
  token: () => Promise<LiveTokens>
}

async function tlsGateway (t: Test, config: Record<string, unknown> = {}): Promise<TlsGateway> {
  const log = memoryLog()
  const store = new MemoryStore()
  const app = await buildGateway({ store, config: { tls: { cert: main.cert, key: main.key }, ...config } as unknown as Partial<GatewayConfig>, logger: { level: 'info', stream: log.stream } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  return { app, port: (app.server.address() as { port: number }).port, log, token: async () => await liveToken(app) }
}

async function session (t: Test, port: number, servername = 'localhost'): Promise<ClientHttp2Session> {
  const opened = await h2Session(port, ca.pem, servername)
  t.teardown(() => { opened.destroy() })
  return opened
}

function signedHeaders (port: number, path: string, token: LiveTokens): Record<string, string> {
  const url = `https://localhost:${port}${path}`
  return { ':path': path, authorization: signRequest({ method: 'GET', url, accessToken: token.accessToken, macKey: token.macKey }) }
}

/** An HTTPS/1.1 request verifying the certificate; resolves to status, headers and body. */
async function https1 (port: number, path: string, headers: Record<string, string> = {}, agent?: Agent): Promise<{ status: number, headers: Record<string, unknown>, body: string, protocol: string | false }> {
  const request = httpsRequest({ host: '127.0.0.1', servername: 'localhost', port, path, ca: ca.pem, headers: { host: `localhost:${port}`, ...headers }, ...(agent !== undefined && { agent }) })
  request.end()
  const [response] = await once(request, 'response') as [import('node:http').IncomingMessage]
  const protocol = (response.socket as TLSSocket).alpnProtocol ?? false
  let body = ''
  response.setEncoding('utf8')
  for await (const chunk of response) body += chunk as string
  return { status: response.statusCode!, headers: response.headers, body, protocol }
}

/** The certificate a fresh handshake gets, by serial number (and the handshake's protocol). */
/** An HTTP/1.1 connection over TLS, handshaken; its errors are the test's to watch for by its state. */
async function http1Connection (port: number, ca: TestCa): Promise<TLSSocket> {
  const socket = tlsConnect({ host: '127.0.0.1', port, ca: ca.pem, servername: 'localhost', ALPNProtocols: ['http/1.1'] })
  socket.on('error', () => {})
  await once(socket, 'secureConnect')
  return socket
}

async function handshake (port: number, servername?: string): Promise<{ serial: string, protocol: string | null }> {
  const socket = tlsConnect({ host: '127.0.0.1', port, ca: ca.pem, ...(servername === undefined ? { checkServerIdentity: () => undefined } : { servername }) })
  socket.on('error', () => {})
  await once(socket, 'secureConnect')
  const answer = { serial: socket.getPeerCertificate().serialNumber, protocol: socket.getProtocol() }
  socket.destroy()
  return answer
}

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

t.test('TLS 1.2 and 1.3 only: a client offering only TLS 1.1 is refused', async (t) => {
  const { port } = await tlsGateway(t)
  // s_client reads stdin: an empty one makes it close after the handshake.
  const sClient = async (...args: string[]): Promise<{ code: number, out: string }> => {
    const running = run('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', '-CAfile', join(ca.dir, 'ca.pem'), ...args], { timeout: 10_000 })
    running.child.stdin!.end()
    try {
      const { stdout, stderr } = await running
      return { code: 0, out: stdout + stderr }
    } catch (error) {
      const failed = error as { code: number, stdout: string, stderr: string }
      return { code: failed.code, out: failed.stdout + failed.stderr }
    }
  }
  const old = await sClient('-tls1_1', '-cipher', 'DEFAULT@SECLEVEL=0')
  t.not(old.code, 0, 'openssl s_client -tls1_1 fails')
  t.match(old.out, /alert protocol version|no protocols available|unsupported protocol|wrong version number/i, 'refused for its version')
  const tls12 = await sClient('-tls1_2')
  t.equal(tls12.code, 0, 'TLS 1.2 is served')
  t.match(tls12.out, /Verify return code: 0 \(ok\)/)
  t.equal((await handshake(port, 'localhost')).protocol, 'TLSv1.3', 'TLS 1.3 is served')
})

t.test('SNI picks the certificate by name, the first pair for any other name or none', async (t) => {
  const a = await ca.issue('sni-a', ['a.test', '*.wild.test'])
  const b = await ca.issue('sni-b', ['b.test'])
  const { port } = await tlsGateway(t, { tls: [{ cert: a.cert, key: a.key }, { cert: b.cert, key: b.key }] })
  t.equal((await handshake(port, 'b.test')).serial, serialOf(b.certPem), 'b.test gets its own')
  t.equal((await handshake(port, 'a.test')).serial, serialOf(a.certPem), 'a.test')
  t.equal((await handshake(port, 'x.wild.test')).serial, serialOf(a.certPem), 'a wildcard name')
  t.equal((await handshake(port, 'B.TEST')).serial, serialOf(b.certPem), 'names compare without case')
  t.equal((await handshake(port, 'c.test').catch(() => ({ serial: 'refused by the client' }))).serial, 'refused by the client', 'an unknown name gets the default, which the verifying client refuses')
  t.equal((await handshake(port)).serial, serialOf(a.certPem), 'no SNI: the first pair')
  const h2 = await session(t, port, 'b.test')
  t.equal((await h2Request(h2, { ':path': '/health/live' })).status, 200, 'HTTP/2 under the SNI-chosen certificate')

  const named = await ca.issue('sni-cn', ['cn.test'], { san: false })
  const byCommonName = await tlsGateway(t, { tls: [{ cert: a.cert, key: a.key }, { cert: named.cert, key: named.key }] })
  t.equal((await handshake(byCommonName.port, 'cn.test')).serial, serialOf(named.certPem), 'a certificate without alternative names is chosen by its common name')
})

t.test('a renewal: new handshakes get the new certificate, open connections keep working; a bad pair keeps the old one', async (t) => {
  const dir = t.testdir()
  const cert = join(dir, 'live.pem')
  const key = join(dir, 'live.key')
  await copyFile(main.cert, cert)
  await copyFile(main.key, key)
  const { app, port, log } = await tlsGateway(t, { tls: { cert, key } })
  const before = await session(t, port)
  t.equal((await h2Request(before, { ':path': '/health/live' })).status, 200)
  t.equal((await handshake(port, 'localhost')).serial, serialOf(main.certPem))

  const renewed = await ca.issue('renewed', ['localhost'])
  await copyFile(renewed.cert, cert)
  await copyFile(renewed.key, key)
  t.same(await app.reloadTls(), { renewed: [cert], kept: [] })
  t.equal((await handshake(port, 'localhost')).serial, serialOf(renewed.certPem), 'a new handshake gets the renewed certificate')
  t.equal((await handshake(port)).serial, serialOf(renewed.certPem), 'without SNI too (the server\'s default context)')
  t.equal((await h2Request(before, { ':path': '/health/live' })).status, 200, 'the session opened before keeps working')
  t.ok(log.lines.some((line) => line.msg === 'tls certificates reloaded' && line.level === 30))

  // A key that is not the certificate's: the pair stays as it was, said at error.
  const other = await ca.issue('other', ['localhost'])
  await copyFile(other.key, key)
  const mismatched = await app.reloadTls()
  t.same(mismatched.renewed, [])
  t.match(mismatched.kept, [{ cert, reason: `config.tls.key: ${key} is not the key of the certificate in ${cert} (config.tls.cert)` }])
  t.ok(log.lines.some((line) => line.level === 50 && line.msg === 'tls certificate not renewed: the old one stays' && String(line.reason).includes('is not the key')), 'logged at error')
  t.equal((await handshake(port, 'localhost')).serial, serialOf(renewed.certPem), 'the old pair still serves')

  await rm(cert)
  const unreadable = await app.reloadTls()
  t.match(unreadable.kept, [{ reason: /^config\.tls\.cert: cannot read .*: ENOENT$/ }], 'a missing file')
  await writeFile(cert, 'not a certificate')
  t.match((await app.reloadTls()).kept, [{ reason: /holds no PEM certificate/ }], 'a file that is no certificate')
  t.equal((await handshake(port, 'localhost')).serial, serialOf(renewed.certPem), 'still the last good pair')
  t.equal((await h2Request(before, { ':path': '/health/live' })).status, 200)

  // A config reload may bring a new list: each pair read, one that fails left out with its reason.
  const fresh = await ca.issue('fresh', ['localhost'])
  const listed = await app.reloadTls([{ cert: fresh.cert, key: fresh.key }, { cert: join(dir, 'nothing.pem'), key }], [{ cert: 'config.tls[0].cert', key: 'config.tls[0].key' }, { cert: 'config.tls[1].cert', key: 'config.tls[1].key' }])
  t.same(listed.renewed, [fresh.cert])
  t.match(listed.kept, [{ reason: /^config\.tls\[1\]\.cert: cannot read/ }])
  t.equal((await handshake(port, 'localhost')).serial, serialOf(fresh.certPem))
  const nothing = join(dir, 'nothing.pem')
  const broken = await app.reloadTls([{ cert: nothing, key: nothing }, { cert: nothing, key: nothing }])
  t.match(broken.kept, [{ reason: `${nothing}: cannot read ${nothing}: ENOENT` }, {}], 'a new list where nothing loads (named by path without labels)...')
  t.equal((await handshake(port, 'localhost')).serial, serialOf(fresh.certPem), '...leaves every old pair serving')
})

t.test('a bad TLS setting fails the start naming the field or flag', async (t) => {
  const dir = t.testdir({ 'gateway.json': JSON.stringify({ tls: { cert: 'missing.pem', key: 'missing.key' } }) })
  const env = cliEnv({ PORT: '0' })
  const missing = await runInProcess(['start', '--config', join(dir, 'gateway.json')], env)
  t.equal(missing.code, 2)
  t.match(missing.stderr, `macgate: config.tls.cert: cannot read ${join(dir, 'missing.pem')}: ENOENT`, 'the path is the config file\'s directory\'s')
  const other = await ca.issue('start-other', ['localhost'])
  const mismatched = await runInProcess(['start', '--tls-cert', main.cert, '--tls-key', other.key], env)
  t.equal(mismatched.code, 2)
  t.match(mismatched.stderr, /^macgate: --tls-key: .* is not the key of the certificate in .* \(--tls-cert\)/)
  const half = await runInProcess(['start', '--tls-cert', main.cert], env)
  t.equal(half.code, 2)
  t.match(half.stderr, 'start: --tls-cert needs --tls-key')
  t.match((await runInProcess(['start', '--tls-key', main.key], env)).stderr, '--tls-key needs --tls-cert')
  const listed = join(dir, 'listed.json')
  await writeFile(listed, JSON.stringify({ tls: [{ cert: main.cert, key: main.key }, { cert: main.cert, key: join(dir, 'gone.key') }] }))
  t.match((await runInProcess(['start', '--config', listed], env)).stderr, 'macgate: config.tls[1].key: cannot read')
  await t.rejects(buildGateway({ store: new MemoryStore(), config: { tls: [{ cert: main.key, key: main.key }] } }), { name: 'TlsFileError', message: /^config\.tls\.cert: .* holds no PEM certificate$/ })
  await t.rejects(buildGateway({ store: new MemoryStore(), config: { tls: [{ cert: main.cert, key: main.cert }] } }), { message: /^config\.tls\.key: .* holds no usable PEM private key/ })
  const weak = await ca.issue('weak', ['localhost'], { key: 'rsa:512' })
  await t.rejects(buildGateway({ store: new MemoryStore(), config: { tls: [{ cert: weak.cert, key: weak.key }] } }), { message: /^config\.tls\.cert: .* cannot be served: .*too small/ }, 'a key OpenSSL refuses at its security level')
})

t.test('the config\'s edge fields: each bad one named', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ tls: 'cert.pem' }, 'config.tls must be {"cert": FILE, "key": FILE}'],
    [{ tls: { cert: 'a.pem' } }, 'config.tls.key must be a file path'],
    [{ tls: { cert: 'a.pem', key: 'a.key', ca: 'x' } }, 'config.tls has an unknown field ca (known: cert, key)'],
    [{ tls: [] }, 'config.tls must list 1 to 32 pairs'],
    [{ tls: [{ cert: 'a.pem', key: 'a.key' }, { cert: '', key: 'b.key' }] }, 'config.tls[1].cert must be a file path'],
    [{ http2: 'yes' }, 'config.http2 must be true, false or {"maxConcurrentStreams": N}'],
    [{ http2: { maxConcurrentStreams: 0 } }, 'config.http2.maxConcurrentStreams must be a whole number from 1 to 10000'],
    [{ http2: { streams: 1 } }, 'config.http2 has an unknown field streams (known: maxConcurrentStreams)'],
    [{ hsts: 1 }, 'config.hsts must be true, false or {"maxAgeSeconds": N, "includeSubDomains": BOOLEAN}'],
    [{ hsts: { maxAgeSeconds: -1 } }, 'config.hsts.maxAgeSeconds must be a whole number from 0 to 63072000'],
    [{ hsts: { includeSubDomains: 'yes' } }, 'config.hsts.includeSubDomains must be boolean'],
    [{ hsts: { preload: true } }, 'config.hsts has an unknown field preload (known: maxAgeSeconds, includeSubDomains)']
  ]
  for (const [input, message] of cases) t.throws(() => parseConfig(input), { name: 'ConfigError', message: `invalid config: ${message}` }, message)
  t.match(parseConfig({}), { http2: { maxConcurrentStreams: 100 }, hsts: { maxAgeSeconds: 31536000, includeSubDomains: false } }, 'the defaults')
  t.notOk('tls' in parseConfig({}), 'no TLS unless asked')
  t.match(parseConfig({ tls: { cert: 'a', key: 'b' }, http2: true, hsts: true }), { tls: [{ cert: 'a', key: 'b' }], http2: { maxConcurrentStreams: 100 }, hsts: { maxAgeSeconds: 31536000 } })
  t.match(parseConfig({ http2: false, hsts: false }), { http2: false, hsts: false })
})

t.test('HTTP/1.1 over TLS keeps the client timeouts: handshake, headers, request, keep-alive', async (t) => {
  for (const http2 of [true, false]) {
    const { port } = await tlsGateway(t, { http2: http2 ? {} : false, clientTimeouts: { headersMs: 300, requestMs: 700, keepAliveMs: 400, checkIntervalMs: 100 } })
    const silent = netConnect(port, '127.0.0.1')
    silent.on('error', () => {})
    await once(silent, 'connect')
    const openedAt = Date.now()
    t.ok(await eventually(async () => silent.destroyed || silent.readableEnded, 3000, 20), `${http2 ? 'h2 server' : 'https server'}: a connection that never starts its handshake is closed`)
    t.ok(Date.now() - openedAt < 2000, `within headersMs and a tick (${Date.now() - openedAt} ms)`)

    const partial = await http1Connection(port, ca)
    partial.write('GET /health/live HTTP/1.1\r\nHost: localhost\r\n')
    const received: Buffer[] = []
    partial.on('data', (chunk: Buffer) => received.push(chunk))
    t.ok(await eventually(async () => partial.destroyed || partial.readableEnded, 3000, 20), 'headers never finished: closed')
    t.match(Buffer.concat(received).toString('latin1'), /^(HTTP\/1\.1 408|)/, 'with a 408, or just closed')

    const upload = await http1Connection(port, ca)
    let uploaded = ''
    upload.on('data', (chunk: Buffer) => { uploaded += chunk.toString('latin1') })
    upload.write('POST /oauth2/rfc/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=')
    const sentAt = Date.now()
    t.ok(await eventually(async () => upload.destroyed || upload.readableEnded, 3000, 20), 'a body that does not arrive: closed')
    t.match(uploaded, /^HTTP\/1\.1 408/, `with a 408 after requestMs (${Date.now() - sentAt} ms)`)

    const kept = await http1Connection(port, ca)
    let answer = ''
    kept.on('data', (chunk: Buffer) => { answer += chunk.toString('latin1') })
    kept.write('GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n')
    t.ok(await eventually(async () => answer.includes('\r\n\r\n'), 3000, 10), 'answered')
    const answeredAt = Date.now()
    t.match(answer, /^HTTP\/1\.1 200 [^]*keep-alive/i, 'kept alive')
    t.ok(await eventually(async () => kept.destroyed || kept.readableEnded, 3000, 20), 'an idle keep-alive connection is closed...')
    t.ok(Date.now() - answeredAt >= 300, `...after keepAliveMs (${Date.now() - answeredAt} ms)`)
  }
})

t.test('HTTP/2 keeps them too: a first stream within headersMs, an idle session ends, a slow body gets 408', async (t) => {
  // keepAliveMs above requestMs: the slow upload's session is not idle long enough to be closed first.
  const { port, log } = await tlsGateway(t, { clientTimeouts: { headersMs: 300, requestMs: 600, keepAliveMs: 1000, checkIntervalMs: 100 } })
  const quiet = await session(t, port)
  const openedAt = Date.now()
  await once(quiet, 'close')
  t.ok(Date.now() - openedAt < 1500, `a session that opens no stream is closed after headersMs (${Date.now() - openedAt} ms)`)

  const idle = await session(t, port)
  t.equal((await h2Request(idle, { ':path': '/health/live' })).status, 200)
  const goaway = once(idle, 'goaway')
  const idleAt = Date.now()
  const [code] = await goaway as [number]
  t.equal(code, constants.NGHTTP2_NO_ERROR, 'an idle session is sent a GOAWAY')
  t.ok(Date.now() - idleAt >= 800, `after keepAliveMs of silence, not headersMs (${Date.now() - idleAt} ms)`)

  const slow = await session(t, port)
  const upload = slow.request({ ':method': 'POST', ':path': '/oauth2/rfc/token', 'content-type': 'application/x-www-form-urlencoded' }, { endStream: false })
  upload.write('grant_type=')
  const [headers] = await once(upload, 'response') as [Record<string, unknown>]
  t.equal(headers[':status'], 408, 'a request whose body does not arrive within requestMs gets 408')
  upload.on('error', () => {})
  await once(upload, 'close')
  t.equal((await h2Request(slow, { ':path': '/health/live' })).status, 200, 'and the session goes on')
  // An absence: no event to wait for, so a moment of real time for a late line to be written.
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.same(log.lines.filter((line) => (line.level as number) >= 50), [], 'nothing logged at error: the request cut short is no fault')
})

t.test('HTTP/2: a bound on concurrent streams, GOAWAY on close with the stream in flight finished', async (t) => {
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  const upstream = await httpUpstream(t, (_request, response) => { void held.then(() => response.end('{"result":"ok"}')) })
  const { app, port, token } = await tlsGateway(t, { http2: { maxConcurrentStreams: 3 }, upstream: upstream.url, routes: [{ path: '/slow', methods: ['GET'] }] })
  const tokens = await token()
  const h2 = await session(t, port)
  t.equal(h2.remoteSettings.maxConcurrentStreams, 3, 'the SETTINGS frame says 3')

  const inflight = Array.from({ length: 5 }, async () => await h2Request(h2, signedHeaders(port, '/slow', tokens)))
  t.ok(await eventually(async () => upstream.received.length === 3, 5000, 10), 'three requests reached the upstream')
  // An absence (no fourth request): only real time shows it.
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(upstream.received.length, 3, 'and no more while those three are open: the other two wait')
  const goaway = once(h2, 'goaway')
  const closed = app.close()
  const [code] = await goaway as [number]
  t.equal(code, constants.NGHTTP2_NO_ERROR, 'closing sends the session a GOAWAY at once')
  release()
  const answers = await Promise.allSettled(inflight)
  t.same(answers.slice(0, 3).map((answer) => answer.status === 'fulfilled' ? answer.value.status : answer.reason), [200, 200, 200], 'the streams in flight finished')
  t.equal(answers.slice(3).filter((answer) => answer.status === 'rejected').length, 2, 'the two never started are refused by the GOAWAY, for the client to retry elsewhere')
  await closed
  t.pass('the close ended')
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

t.test('a cert file holding the chain: the intermediate is served, and a client trusting only the root verifies it', async (t) => {
  const chained = await ca.issueChained('chained', ['localhost'])
  const { port } = await tlsGateway(t, { tls: { cert: chained.cert, key: chained.key } })
  const socket = tlsConnect({ host: '127.0.0.1', port, ca: ca.pem, servername: 'localhost' })
  socket.on('error', () => {})
  await once(socket, 'secureConnect')
  t.equal(socket.authorized, true, 'verified against the root alone')
  const presented = socket.getPeerCertificate(true)
  t.equal(presented.serialNumber, serialOf(chained.certPem), 'the leaf first')
  t.match(presented.issuerCertificate.subject.CN, 'chained intermediate', 'then the intermediate from the file')
  socket.destroy()
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
