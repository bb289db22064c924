// Behind a trusted proxy (config.trustProxy): Debian's nginx in front of a real gateway on loopback.
// Callers connect to nginx from addresses of their own (127.0.0.2, 127.0.0.3); nginx connects to the
// gateway from 127.0.0.1, the one trusted address.
import { readFileSync } from 'node:fs'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import t, { type Test } from 'tap'
import { ConfigError, parseConfig } from '../../../gateway/config/gateway-config.ts'
import { buildGateway, fromTrustedProxy, trustedProxies } from '../../../gateway/index.ts'
import { MemoryStore } from '../../../plugin/index.ts'
import { signRequest } from '../../../plugin/client/index.ts'
import { echoRoutes, liveToken, recordingUpstream } from '../../helpers/gateway.ts'
import { memoryLog } from '../../helpers/memory-log.ts'
import { NGINX_LOCATION, startNginx } from '../../helpers/nginx.ts'

interface Answer { status: number, headers: IncomingHttpHeaders, body: string }

/** One request over its own connection from `from` (a loopback address of the caller's). */
async function call (port: number, path: string, { from = '127.0.0.1', method = 'GET', headers = {} }: { from?: string, method?: string, headers?: Record<string, string> } = {}): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, localAddress: from, agent: false, headers }, (response) => {
      let body = ''
      response.on('data', (chunk) => { body += String(chunk) })
      response.on('end', () => { resolve({ status: response.statusCode!, headers: response.headers, body }) })
    })
    req.on('error', reject)
    req.end()
  })
}

async function gatewayBehindNginx (t: Test) {
  const upstream = await recordingUpstream(t)
  const log = memoryLog()
  const store = new MemoryStore()
  const app = await buildGateway({
    store,
    logger: { level: 'info', stream: log.stream },
    config: {
      upstream: upstream.url,
      routes: echoRoutes,
      trustProxy: ['127.0.0.1', '::1'],
      issuer: 'https://id.example.com',
      signInRateLimit: 2,
      clientAuthRateLimit: { perClient: 1000, perAddress: 2 }
    }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  const gatewayPort = (app.server.address() as { port: number }).port
  const nginx = await startNginx(t, gatewayPort)
  return { app, upstream, log, gatewayPort, nginxPort: nginx.port }
}

t.test('behind nginx: the caller\'s own address counts, is logged and goes upstream; forged entries do not', async (t) => {
  const { app, upstream, log, gatewayPort, nginxPort } = await gatewayBehindNginx(t)

  // The sign-in limit (2 a minute) per caller, not per proxy.
  const signIn = async (from: string): Promise<number> => (await call(nginxPort, '/oauth2/signin', { from, method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status
  const first = [await signIn('127.0.0.2'), await signIn('127.0.0.2'), await signIn('127.0.0.2')]
  t.not(first[1], 429, 'the second attempt is within the limit')
  t.equal(first[2], 429, 'the third from 127.0.0.2 is over it')
  t.not(await signIn('127.0.0.3'), 429, 'another caller behind the same proxy is not held back')

  // The per-address limit of failed client authentications, likewise.
  const token = await liveToken(app)
  const wrongSecret = (from: string) => call(nginxPort, `/oauth2/token?${new URLSearchParams({ grant_type: 'authorization_code', client_id: token.clientId, client_secret: 'wrong', code: 'x', redirect_uri: 'https://app.example.com/cb' }).toString()}`, { from })
  const failures = [(await wrongSecret('127.0.0.2')).status, (await wrongSecret('127.0.0.2')).status, (await wrongSecret('127.0.0.2')).status]
  t.equal(failures[2], 429, `the third failure from 127.0.0.2 is refused (${failures.join(', ')})`)
  t.not((await wrongSecret('127.0.0.3')).status, 429, 'another caller\'s first one is judged')

  // A signed request through nginx, with a forged X-Forwarded-For and X-Forwarded-Host.
  const url = `http://127.0.0.1:${nginxPort}/echo/who`
  const authorization = signRequest({ method: 'GET', url, accessToken: token.accessToken, macKey: token.macKey })
  const signed = await call(nginxPort, '/echo/who', { from: '127.0.0.2', headers: { authorization, 'x-forwarded-for': '203.0.113.66, 127.0.0.1', 'x-forwarded-host': 'evil.example' } })
  t.equal(signed.status, 200, 'nginx passes Host through; the mac binds it, never X-Forwarded-Host')
  const seen = upstream.requests.at(-1)!
  // nginx appends its caller: "203.0.113.66, 127.0.0.1, 127.0.0.2"; 127.0.0.1 is trusted, but 127.0.0.2 is the right-most untrusted one.
  t.equal(seen.headers['x-forwarded-for'], '127.0.0.2, 127.0.0.1', 'upstream: the caller, then the proxy; the forged entries left of the caller are gone')
  t.equal(seen.headers['x-forwarded-proto'], 'http', 'and the scheme the proxy was reached with')
  t.notOk(JSON.stringify(seen.rawHeaders).includes('evil.example'), 'no forwarded host upstream')
  const line = log.lines.find((entry) => entry.msg === 'request' && entry.path === '/echo/who')
  t.equal(line?.ip, '127.0.0.2', 'the access log names the caller')
  // (The token's own sign-in went in process, from 127.0.0.1.)
  const signIns = log.lines.filter((entry) => entry.msg === 'request' && entry.path === '/oauth2/signin' && entry.method === 'POST' && entry.ip !== '127.0.0.1').map((entry) => entry.ip)
  t.same(signIns, ['127.0.0.2', '127.0.0.2', '127.0.0.2', '127.0.0.3'], 'every sign-in through the proxy is logged under its caller')

  // X-Forwarded-Proto: https from the trusted proxy's address: the session cookie is Secure.
  const viaTls = await call(gatewayPort, '/oauth2/signin', { headers: { 'x-forwarded-proto': 'https' } })
  t.match(String(viaTls.headers['set-cookie']), /; Secure/, 'Secure behind a TLS-terminating proxy')
  const plain = await call(gatewayPort, '/oauth2/signin')
  t.notMatch(String(plain.headers['set-cookie']), /Secure/, 'not over plain HTTP')
})

t.test('from an untrusted peer every forwarding header is ignored and dropped', async (t) => {
  const { app, upstream, log, gatewayPort } = await gatewayBehindNginx(t)
  const token = await liveToken(app)
  const url = `http://127.0.0.1:${gatewayPort}/echo/direct`
  const authorization = signRequest({ method: 'GET', url, accessToken: token.accessToken, macKey: token.macKey })
  const forged = { authorization, 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'https', forwarded: 'for=10.1.1.1', 'x-real-ip': '10.1.1.1' }
  const answer = await call(gatewayPort, '/echo/direct', { from: '127.0.0.2', headers: forged })
  t.equal(answer.status, 200)
  const seen = upstream.requests.at(-1)!
  t.equal(seen.headers['x-forwarded-for'], '127.0.0.2', 'the peer\'s own address, nothing it claimed')
  t.equal(seen.headers['x-forwarded-proto'], 'http', 'the connection\'s own scheme')
  t.notOk(JSON.stringify(seen.rawHeaders).includes('10.1.1.1'), 'Forwarded and X-Real-IP dropped')
  t.equal(log.lines.find((entry) => entry.path === '/echo/direct')?.ip, '127.0.0.2')
  const page = await call(gatewayPort, '/oauth2/signin', { from: '127.0.0.2', headers: { 'x-forwarded-proto': 'https' } })
  t.notMatch(String(page.headers['set-cookie']), /Secure/, 'an untrusted peer cannot claim https')
})

t.test('fromTrustedProxy: the connection\'s peer only, IPv4 and IPv6 ranges', async (t) => {
  const store = new MemoryStore()
  const app = await buildGateway({ store, config: { trustProxy: ['10.0.0.0/8', '2001:db8::/32', '127.0.0.1'], issuer: 'https://id.example.com' } })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  app.get('/peer', async (request) => ({ trusted: fromTrustedProxy(request), ip: request.ip }))
  const peer = async (remoteAddress: string, headers: Record<string, string> = {}) => (await app.inject({ url: '/peer', remoteAddress, headers })).json() as { trusted: boolean, ip: string }
  t.same(await peer('10.2.3.4', { 'x-forwarded-for': '198.51.100.7' }), { trusted: true, ip: '198.51.100.7' })
  t.same(await peer('2001:db8::5', { 'x-forwarded-for': '198.51.100.7, 10.9.9.9' }), { trusted: true, ip: '198.51.100.7' }, 'a trusted hop in the list is skipped')
  t.same(await peer('198.51.100.7', { 'x-forwarded-for': '10.2.3.4' }), { trusted: false, ip: '198.51.100.7' })
  t.same(await peer('::ffff:10.2.3.4'), { trusted: true, ip: '::ffff:10.2.3.4' }, 'an IPv4-mapped address is its IPv4 address')
  const check = trustedProxies(['192.168.0.0/16'])
  t.same([check('192.168.4.4'), check('192.169.0.1'), trustedProxies(undefined)('127.0.0.1')], [true, false, false])

  const plain = await buildGateway({ store })
  t.teardown(async () => await plain.close())
  plain.get('/peer', async (request) => ({ trusted: fromTrustedProxy(request), ip: request.ip }))
  t.same((await plain.inject({ url: '/peer', remoteAddress: '10.2.3.4', headers: { 'x-forwarded-for': '1.2.3.4' } })).json(), { trusted: false, ip: '10.2.3.4' }, 'without trustProxy nobody is trusted')
})

t.test('trustProxy needs an issuer and takes addresses and ranges only', async (t) => {
  const refusal = (input: unknown): string => {
    try {
      parseConfig(input)
      return 'accepted'
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error
      return error.message
    }
  }
  t.match(refusal({ trustProxy: ['10.0.0.0/8'] }), /config\.trustProxy needs config\.issuer/)
  t.equal(refusal({ trustProxy: ['10.0.0.0/8', 'fd00::/8', '127.0.0.1', '::1'], issuer: 'https://id.example.com' }), 'accepted')
  t.match(refusal({ trustProxy: ['10.0.0.0/8', 'proxy.example.com'], issuer: 'https://id.example.com' }), /config\.trustProxy\[1\] must be an IP address or a CIDR range/)
  t.match(refusal({ trustProxy: ['10.0.0.0/33'], issuer: 'https://id.example.com' }), /config\.trustProxy\[0\]/)
  t.match(refusal({ trustProxy: [], issuer: 'https://id.example.com' }), /config\.trustProxy must NOT have fewer than 1 items/)
})

t.test('the README\'s nginx snippet is the one tested here', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  t.ok(readme.includes(NGINX_LOCATION), 'README carries the location block word for word')
})
