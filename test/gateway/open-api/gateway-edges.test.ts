// The proxy's edges (contract section 6, last point), against real upstreams that record what they
// got: identity headers spoofed with `_` (node and WSGI upstreams), `token`/`clientId` bindings
// with percent-encoded names, hop-by-hop and Expect/Upgrade headers, two Host lines, and method
// override headers. Malformed, repeated or connection-level headers go over raw sockets.
import { connect } from 'node:net'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { GatewayConfig } from '../../../gateway/config/gateway-config.ts'
import { API_HOST, buildTestGateway, defaultAuthorization, echoRoutes, hmac, liveToken, nonceAt, openApiError, recordingUpstream, signedInject, signedString, type LiveTokens, type Recorded } from '../../helpers/gateway.ts'
import { dechunk } from '../../helpers/dechunk.ts'
import { pathRefusal } from '../../../gateway/open-api/proxy.ts'
import { wsgiUpstream } from '../../helpers/wsgi-upstream.ts'

const IDENTITY_HEADERS = ['x-macgate-client-id', 'x-macgate-open-id', 'x-macgate-scope', 'x-macgate-user-id']

/** What the client tries to pass off as its identity, in every spelling a CGI upstream folds together. */
const SPOOFED = [
  'x_macgate_user_id: admin',
  'X_MACGATE_SCOPE: 1 3 4 6',
  'x-macgate_open-id: x',
  'X-MacGate-Client-Id: y',
  'x_macgate-anything: z'
]

/** A gateway proxying `echoRoutes` to `upstream`, with a live token (scope 1 3 4 6 unless given). */
async function gatewayTo (t: Test, upstream: string, { config = {}, scope }: { config?: Record<string, unknown>, scope?: string } = {}): Promise<{ app: FastifyInstance, token: LiveTokens }> {
  const gatewayConfig = { upstream, routes: echoRoutes, ...config } as unknown as Partial<GatewayConfig>
  const { app } = await buildTestGateway(t, { config: gatewayConfig })
  const token = await liveToken(app, scope === undefined ? {} : { scope })
  return { app, token }
}

/** Listens on a loopback port (once per app) and returns the port. */
async function portOf (app: FastifyInstance): Promise<number> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as { port: number }).port
}

/** The Authorization header for `method url` on api.example.com, signed as the helpers sign it. */
function authorizationFor (token: LiveTokens, { method = 'GET', url, nonce = nonceAt() }: { method?: string, url: string, nonce?: string }): string {
  const mac = hmac(token.macKey, signedString({ method, url, nonce, token: token.accessToken, macKey: token.macKey }))
  return defaultAuthorization({ token: token.accessToken, nonce, mac })
}

/** A signed request's head: request line, Host, Authorization, then `extra` lines verbatim. */
function signedHead (token: LiveTokens, { method = 'GET', url, extra = [], authorization }: { method?: string, url: string, extra?: string[], authorization?: string }): string[] {
  return [`${method} ${url} HTTP/1.1`, `Host: ${API_HOST}`, `Authorization: ${authorization ?? authorizationFor(token, { method, url })}`, ...extra]
}

interface RawAnswer {
  /** Statuses of the 1xx interim responses before the final one. */
  interim: number[]
  /** 0 when no final response came. */
  status: number
  headers: Record<string, string>
  body: string
  complete: boolean
}

/** Reads what a server wrote so far: the interim responses, then the final one (ASCII bodies). */
function parseAnswer (raw: string): RawAnswer {
  const interim: number[] = []
  let rest = raw
  for (;;) {
    const end = rest.indexOf('\r\n\r\n')
    if (end === -1) return { interim, status: 0, headers: {}, body: '', complete: false }
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n')
    const status = Number(statusLine!.split(' ')[1])
    rest = rest.slice(end + 4)
    if (status >= 100 && status < 200 && status !== 101) {
      interim.push(status)
      continue
    }
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length'])
      return { interim, status, headers, body: rest.slice(0, length), complete: rest.length >= length }
    }
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) return { interim, status, headers, ...dechunk(rest) }
    return { interim, status, headers, body: rest, complete: false }
  }
}

/**
 * Writes `head` (lines, CRLF-joined) and `body` on a new socket to the gateway and reads the answer.
 * With `waitForContinue`, the body goes only after a 100 Continue (or after 1 s without one).
 */
async function rawRequest (port: number, head: string[], body = '', { waitForContinue = false } = {}): Promise<RawAnswer> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let raw = ''
    let bodySent = false
    let done = false
    const sendBody = (): void => {
      if (bodySent) return
      bodySent = true
      if (body !== '') socket.write(body)
    }
    const finish = (): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      clearTimeout(continueTimer)
      socket.destroy()
      resolve(parseAnswer(raw))
    }
    const timer = setTimeout(finish, 4000)
    const continueTimer = setTimeout(sendBody, waitForContinue ? 1000 : 0)
    socket.setEncoding('latin1')
    socket.on('connect', () => {
      socket.write(`${head.join('\r\n')}\r\n\r\n`)
      if (!waitForContinue) sendBody()
    })
    socket.on('data', (chunk: string) => {
      raw += chunk
      const answer = parseAnswer(raw)
      if (answer.interim.includes(100)) sendBody()
      if (answer.complete) finish()
    })
    socket.on('error', () => {})
    socket.on('close', finish)
  })
}

/** Header names as the upstream got them, lower case, with duplicates. */
function receivedNames (request: Recorded): string[] {
  return request.rawHeaders.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase())
}

/** Read as a CGI/WSGI upstream reads it: lower case, `_` as `-`. */
function foldsToIdentity (name: string): boolean {
  return name.toLowerCase().replaceAll('_', '-').startsWith('x-macgate-')
}

/** The upstream's raw header lines that fold to an identity header, as `name: value`. */
function identityLines (request: Recorded): string[] {
  const lines: string[] = []
  for (let i = 0; i < request.rawHeaders.length; i += 2) {
    if (foldsToIdentity(request.rawHeaders[i]!)) lines.push(`${request.rawHeaders[i]!.toLowerCase()}: ${request.rawHeaders[i + 1]!}`)
  }
  return lines.sort()
}

function verifiedIdentity (token: LiveTokens, scope = token.scope): string[] {
  return [`x-macgate-client-id: ${token.clientId}`, `x-macgate-open-id: ${token.openId}`, `x-macgate-scope: ${scope}`, `x-macgate-user-id: ${token.userId}`]
}

function noServerError (t: Test, status: number, what: string): void {
  t.ok(status < 500, `${what}: no 5xx (got ${status}); a 5xx means the gateway failed on the request instead of answering it`)
}

/** The one request the upstream got since `before`, or undefined (with a failed assertion) otherwise. */
function onlyNew (t: Test, requests: Recorded[], before: number, what: string): Recorded | undefined {
  t.equal(requests.length, before + 1, `${what}: the upstream got exactly one request`)
  return requests.length === before + 1 ? requests.at(-1) : undefined
}

t.test('1. identity headers spoofed with underscores never reach the upstream', async (t) => {
  t.test('node upstream: exactly the four verified identity headers, by raw header lines', async (t) => {
    const upstream = await recordingUpstream(t)
    const { app, token } = await gatewayTo(t, upstream.url)
    const port = await portOf(app)
    const answer = await rawRequest(port, signedHead(token, { url: '/echo/identity', extra: [...SPOOFED, 'Connection: close'] }))
    noServerError(t, answer.status, 'spoofed identity headers')
    t.equal(answer.status, 200, 'a verified request carrying spoofed identity headers is still proxied (they are removed, not refused)')
    const seen = onlyNew(t, upstream.requests, 0, 'spoofed identity headers')
    if (seen === undefined) return
    t.same(identityLines(seen), verifiedIdentity(token),
      'the upstream sees exactly the four identity headers with the verified values; any other line means a spoofed header (with `_`) went through, which a CGI/WSGI upstream reads as the identity')
    t.same(receivedNames(seen).filter(foldsToIdentity).sort(), IDENTITY_HEADERS, 'each identity header exactly once, in its dashed spelling')
    t.equal(seen.headers.authorization, undefined, 'no Authorization upstream')
  })

  t.test('WSGI upstream: HTTP_X_MACGATE_* are exactly the verified identity', async (t) => {
    const origin = await wsgiUpstream(t)
    // Granted less than the spoofed scope claims, so that a spoof that gets through shows.
    const { app, token } = await gatewayTo(t, origin, { scope: '1 3' })
    t.equal(token.scope, '1 3', 'the token was granted 1 3')
    const port = await portOf(app)
    const answer = await rawRequest(port, signedHead(token, { url: '/echo/wsgi', extra: [...SPOOFED, 'Connection: close'] }))
    noServerError(t, answer.status, 'spoofed identity headers to a WSGI upstream')
    t.equal(answer.status, 200, 'the WSGI upstream answered through the gateway')
    let environ: Record<string, string> = {}
    try {
      environ = JSON.parse(answer.body) as Record<string, string>
    } catch {
      t.fail(`the gateway did not pass on the WSGI upstream's JSON: ${answer.status} ${answer.body}`)
      return
    }
    t.equal(environ.HTTP_X_MACGATE_SCOPE, '1 3', 'HTTP_X_MACGATE_SCOPE is the granted scope alone; a `,` or another scope in it means a spoofed X_MACGATE_SCOPE was joined in or won')
    t.equal(environ.HTTP_X_MACGATE_USER_ID, token.userId, 'HTTP_X_MACGATE_USER_ID is the real user, not the spoofed admin')
    t.equal(environ.HTTP_X_MACGATE_OPEN_ID, token.openId, 'HTTP_X_MACGATE_OPEN_ID is the real openId, not the spoofed x')
    t.equal(environ.HTTP_X_MACGATE_CLIENT_ID, token.clientId, 'HTTP_X_MACGATE_CLIENT_ID is the real client, not the spoofed y')
    t.same(Object.keys(environ).filter((key) => key.startsWith('HTTP_X_MACGATE_')).sort(), ['HTTP_X_MACGATE_CLIENT_ID', 'HTTP_X_MACGATE_OPEN_ID', 'HTTP_X_MACGATE_SCOPE', 'HTTP_X_MACGATE_USER_ID'],
      'no other HTTP_X_MACGATE_* key: one would be a spoofed header the gateway let through')
    t.equal(environ.HTTP_AUTHORIZATION, undefined, 'no Authorization reaches the WSGI app')
  })
})

t.test('2. token and clientId bindings hold however the name is percent-encoded', async (t) => {
  const upstream = await recordingUpstream(t)
  const { app, token } = await gatewayTo(t, upstream.url)
  const other = await liveToken(app)
  const call = async (url: string) => await signedInject(app, { url, token: token.accessToken, macKey: token.macKey })

  t.test('clientI%64 of another client is refused as clientId is', async (t) => {
    const before = upstream.requests.length
    for (const name of ['clientId', 'clientI%64', '%63lientId']) {
      const response = await call(`/echo/bind?${name}=${other.clientId}`)
      noServerError(t, response.statusCode, `?${name}=<other client>`)
      t.equal(response.statusCode, 401, `?${name}=<other client> is refused; 200 means the clientId binding was bypassed by encoding its name`)
      t.same(response.json(), openApiError(96012, 'clientId parameter does not match the token'), `?${name}=<other client>: 96012`)
    }
    t.equal(upstream.requests.length, before, 'none of them reached the upstream')
  })

  t.test('%74oken / tok%65n equal to the access token are accepted and never go upstream', async (t) => {
    for (const name of ['token', '%74oken', 'tok%65n', '%74%6F%6B%65%6E']) {
      const before = upstream.requests.length
      const response = await call(`/echo/bind?a=1&${name}=${encodeURIComponent(token.accessToken)}&b=2`)
      noServerError(t, response.statusCode, `?${name}=<the access token>`)
      t.equal(response.statusCode, 200, `?${name}=<the access token> is accepted`)
      const seen = onlyNew(t, upstream.requests, before, `?${name}=<the access token>`)
      if (seen === undefined) continue
      const query = new URLSearchParams(seen.url.slice(seen.url.indexOf('?') + 1))
      t.notOk(query.has('token'), `?${name}: the upstream URL ${seen.url} has no token parameter by any encoding`)
      t.same([query.get('a'), query.get('b')], ['1', '2'], `?${name}: the other parameters still go upstream`)
      const everything = JSON.stringify({ url: seen.url, headers: seen.headers, body: seen.body })
      t.notOk(everything.includes(token.accessToken) || everything.includes(encodeURIComponent(token.accessToken)),
        `?${name}: the access token appears nowhere upstream (URL, headers or body); it is a bearer secret to the upstream's logs`)
    }
  })

  t.test('%74oken of another value is refused as token is', async (t) => {
    const before = upstream.requests.length
    for (const name of ['token', '%74oken', 'tok%65n']) {
      const response = await call(`/echo/bind?${name}=${encodeURIComponent(other.accessToken)}`)
      noServerError(t, response.statusCode, `?${name}=<another token>`)
      t.equal(response.statusCode, 401, `?${name}=<another token> is refused; 200 means the token binding was bypassed by encoding its name`)
      t.same(response.json(), openApiError(96012, 'token parameter does not match the access token'), `?${name}=<another token>: 96012`)
    }
    t.equal(upstream.requests.length, before, 'none of them reached the upstream')
  })

  t.test('%54oken is another name (Token) and is left alone', async (t) => {
    const before = upstream.requests.length
    const response = await call('/echo/bind?%54oken=left-alone')
    noServerError(t, response.statusCode, '?%54oken=left-alone')
    t.equal(response.statusCode, 200, 'a Token parameter is not bound to the access token (names are case-sensitive)')
    const seen = onlyNew(t, upstream.requests, before, '?%54oken')
    if (seen !== undefined) t.equal(seen.url, '/echo/bind?%54oken=left-alone', 'the Token parameter goes upstream as sent')
  })
})

t.test('3. hop-by-hop and connection headers', async (t) => {
  const upstream = await recordingUpstream(t)
  const { app, token } = await gatewayTo(t, upstream.url)
  const port = await portOf(app)

  t.test('Expect: 100-continue gets the 100, then the upstream\'s 200, and expect stays here', async (t) => {
    const before = upstream.requests.length
    const body = JSON.stringify({ hello: 'continue' })
    const head = signedHead(token, {
      method: 'POST',
      url: '/echo/expect',
      extra: ['Content-Type: application/json', `Content-Length: ${body.length}`, 'Expect: 100-continue', 'Connection: close']
    })
    const answer = await rawRequest(port, head, body, { waitForContinue: true })
    t.same(answer.interim, [100], 'the client got HTTP/1.1 100 Continue before sending the body')
    noServerError(t, answer.status, 'Expect: 100-continue')
    t.equal(answer.status, 200, `the upstream's 200 comes back (got ${answer.status} ${answer.body})`)
    const seen = onlyNew(t, upstream.requests, before, 'Expect: 100-continue')
    if (seen === undefined) return
    t.equal(seen.body, body, 'the body reached the upstream whole')
    t.notOk(receivedNames(seen).includes('expect'), 'the upstream did not get expect: it is between the client and the gateway')
  })

  const HOP_BY_HOP = ['keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'x-private']
  const cases: Array<[string, string[]]> = [
    ['Keep-Alive', ['Connection: keep-alive', 'Keep-Alive: timeout=5']],
    ['a header named in Connection', ['Connection: keep-alive, X-Private', 'X-Private: secret']],
    ['TE: trailers', ['TE: trailers']],
    ['Proxy-Connection', ['Proxy-Connection: keep-alive']],
    ['Trailer', ['Trailer: X-T']],
    ['all of them together', ['Connection: keep-alive, X-Private', 'Keep-Alive: timeout=5', 'X-Private: secret', 'TE: trailers', 'Proxy-Connection: keep-alive', 'Trailer: X-T']]
  ]
  for (const [name, extra] of cases) {
    t.test(`${name}: 200, and no hop-by-hop header upstream`, async (t) => {
      const before = upstream.requests.length
      const answer = await rawRequest(port, signedHead(token, { url: '/echo/hop', extra }))
      noServerError(t, answer.status, name)
      t.equal(answer.status, 200, `${name}: the verified request is proxied (got ${answer.status} ${answer.body})`)
      const seen = onlyNew(t, upstream.requests, before, name)
      if (seen === undefined) return
      const leaked = receivedNames(seen).filter((header) => HOP_BY_HOP.includes(header))
      t.same(leaked, [], `${name}: hop-by-hop headers (and those named in Connection) stay between client and gateway`)
      const connection = seen.headers.connection ?? ''
      t.notMatch(connection, /x-private|upgrade/i, `${name}: the client's Connection options are not passed on (upstream Connection: ${connection})`)
    })
  }

  t.test('Upgrade: websocket is refused with 96002 before the nonce is spent', async (t) => {
    const before = upstream.requests.length
    const url = '/echo/ws'
    const authorization = authorizationFor(token, { url })
    const upgrade = await rawRequest(port, signedHead(token, {
      url,
      authorization,
      extra: ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==']
    }))
    noServerError(t, upgrade.status, 'Upgrade: websocket')
    t.ok(upgrade.status >= 400 && upgrade.status < 500, `an upgrade the gateway cannot proxy is a 4xx (got ${upgrade.status})`)
    let body: Record<string, unknown> = {}
    try {
      body = JSON.parse(upgrade.body) as Record<string, unknown>
    } catch {}
    t.equal(body.result, 'error', `the refusal is in the open API shape (got ${upgrade.body})`)
    t.equal(body.code, 96002, 'with code 96002')
    t.equal(upstream.requests.length, before, 'the upgrade did not reach the upstream')

    const plain = await app.inject({ url, headers: { host: API_HOST, authorization } })
    noServerError(t, plain.statusCode, 'the same signed request without Upgrade')
    t.equal(plain.statusCode, 200, `the same nonce still works without Upgrade; 401 nonce already used means the refused upgrade spent it (got ${plain.body})`)
  })
})

t.test('4. two Host lines are a 400 and reach nothing', async (t) => {
  const upstream = await recordingUpstream(t)
  const { app, token } = await gatewayTo(t, upstream.url)
  const port = await portOf(app)
  const [requestLine, , authorization] = signedHead(token, { url: '/echo/host' })
  for (const [name, hosts] of [['good then evil', [API_HOST, 'evil.example']], ['evil then good', ['evil.example', API_HOST]]] as const) {
    const answer = await rawRequest(port, [requestLine!, `Host: ${hosts[0]}`, `Host: ${hosts[1]}`, authorization!, 'Connection: close'])
    noServerError(t, answer.status, `two Host lines, ${name}`)
    t.not(answer.status, 200, `two Host lines (${name}) are never proxied`)
    t.equal(answer.status, 400, `two Host lines (${name}): 400, the request is malformed (got ${answer.status})`)
  }
  t.equal(upstream.requests.length, 0, 'the upstream received nothing')
})

t.test('5. method override headers', async (t) => {
  const OVERRIDES = { 'X-HTTP-Method-Override': 'DELETE', 'X-HTTP-Method': 'DELETE', 'X-Method-Override': 'DELETE' }
  const names = Object.keys(OVERRIDES).map((name) => name.toLowerCase())

  /** A signed GET carrying every override header through a gateway with `config`: what the upstream got. */
  const sendOverrides = async (t: Test, label: string, config: Record<string, unknown> = {}): Promise<Recorded | undefined> => {
    const upstream = await recordingUpstream(t)
    const { app, token } = await gatewayTo(t, upstream.url, { config })
    const response = await signedInject(app, { url: '/echo/override', token: token.accessToken, macKey: token.macKey, headers: OVERRIDES })
    noServerError(t, response.statusCode, label)
    t.equal(response.statusCode, 200, 'the verified GET is proxied')
    return onlyNew(t, upstream.requests, 0, label)
  }

  t.test('not forwarded by default', async (t) => {
    const seen = await sendOverrides(t, 'method override headers')
    if (seen === undefined) return
    t.equal(seen.method, 'GET', 'the upstream got a GET')
    t.same(receivedNames(seen).filter((name) => names.includes(name)), [],
      'no method override header upstream: the signature covered GET, and an upstream honouring them would run a DELETE')
  })

  t.test('forwarded with forwardMethodOverride: true', async (t) => {
    const seen = await sendOverrides(t, 'method override headers, forwarded', { forwardMethodOverride: true })
    if (seen === undefined) return
    t.equal(seen.method, 'GET', 'the gateway itself does not change the method')
    for (const name of names) t.equal(seen.headers[name], 'DELETE', `${name} reaches the upstream when the deployment opts in`)
  })
})

t.test('6. the caller\'s own claims of where it came from never reach the upstream', async (t) => {
  const upstream = await recordingUpstream(t)
  const { app, token } = await gatewayTo(t, upstream.url)
  const claims = { Forwarded: 'for=10.0.0.1', 'X-Forwarded-For': '10.0.0.1', 'X-Forwarded-Host': 'admin.internal', 'X-Forwarded-Proto': 'https', 'X-Real-IP': '10.0.0.1', 'X-Client-IP': '10.0.0.1' }
  const response = await signedInject(app, { url: '/echo/origin', token: token.accessToken, macKey: token.macKey, headers: claims })
  t.equal(response.statusCode, 200)
  const seen = onlyNew(t, upstream.requests, 0, 'forwarding claims')
  if (seen === undefined) return
  t.notOk(JSON.stringify(seen.rawHeaders).includes('10.0.0.1'), 'no claimed address upstream')
  t.notOk(JSON.stringify(seen.rawHeaders).includes('admin.internal'), 'no claimed host upstream')
  t.equal(seen.headers['x-forwarded-for'], '127.0.0.1', 'the gateway says where the request came from')
  t.same(receivedNames(seen).filter((name) => ['forwarded', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip', 'x-client-ip'].includes(name)), [])
})

t.test('7. a path that would leave its route is refused before the check and reaches nothing; one that stays on it goes as sent', async (t) => {
  const upstream = await recordingUpstream(t)
  const { app, token } = await gatewayTo(t, upstream.url)
  const port = await portOf(app)
  // Each under /echo/* as the route table sees it; decoded, a backslash read as `/` as URL parsers read it, most would climb out.
  const refused: Array<[string, string]> = [
    ['/echo/..%2fuser/profile', 'the path has a .. segment'],
    ['/echo/%2e%2e/user/profile', 'the path has a .. segment'],
    ['/echo/x\\..\\..\\user/profile', 'the path has a .. segment'],
    ['/echo/x%5c..%5c..%5cuser/profile', 'the path has a .. segment'],
    // The router refuses these first; pathRefusal would too (below).
    ['/echo/%zz', 'the request path is not valid percent-encoded UTF-8'],
    ['/echo/%C3%28', 'the request path is not valid percent-encoded UTF-8']
  ]
  for (const [url, reason] of refused) {
    const before = upstream.requests.length
    const authorization = authorizationFor(token, { url })
    const answer = await rawRequest(port, signedHead(token, { url, authorization, extra: ['Connection: close'] }))
    t.equal(answer.status, 400, `${url}: 400`)
    t.same(JSON.parse(answer.body), openApiError(96002, reason), `${url}: ${reason}`)
    t.equal(upstream.requests.length, before, `${url}: nothing reached the upstream`)
    const again = await rawRequest(port, signedHead(token, { url: '/echo/after', extra: ['Connection: close'] }))
    t.equal(again.status, 200, `${url}: refused before the check, the gateway serves on`)
  }
  for (const [path] of refused.slice(-2)) t.equal(pathRefusal(path), 'the path has a bad percent-encoding', `${path}: refused by the route check too`)
  // Within the route, however it is spelt: the upstream gets the path as an http URL reads it (single dots gone), on its own host.
  const kept: Array<[string, string]> = [
    ['/echo/a..b/./c', '/echo/a..b/c'],
    ['/echo//upstream.example/x', '/echo//upstream.example/x'],
    ['/echo/%2e/x', '/echo/x'],
    ['/echo/caf%C3%A9', '/echo/caf%C3%A9']
  ]
  for (const [url, sent] of kept) {
    const before = upstream.requests.length
    const answer = await rawRequest(port, signedHead(token, { url, extra: ['Connection: close'] }))
    t.equal(answer.status, 200, `${url}: served`)
    const seen = onlyNew(t, upstream.requests, before, url)
    t.equal(seen?.url, sent, `${url}: the upstream got ${sent}`)
    t.equal(seen?.headers.host, new URL(upstream.url).host, `${url}: on the upstream's own host`)
  }
})
