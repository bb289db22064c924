// The fuzz over raw sockets, for what inject cannot express (request lines, header bytes): probes,
// the exchange, and the judging of Node's own answers.
import { enc, FORM, type Gen } from './fuzz-pools.ts'
import { dechunk } from './dechunk.ts'
import { connect } from 'node:net'
import { REDIRECT_URI } from './app.ts'
import { API_HOST, defaultAuthorization } from './gateway.ts'
import { type World } from './fuzz-world.ts'
import { BASE_PATHS, LONG } from './fuzz-values.ts'
import { asSent, macOf, nonceFor } from './fuzz-probes.ts'
import { judge, type Problem, Tally } from './fuzz-judge.ts'

const RAW_BATCH = 25
const RAW_TIMEOUT_MS = 5000

interface RawProbe {
  label: string
  /** Latin-1: each character one byte. */
  bytes: string
  /** Ends the sending side after writing (for requests the server would otherwise wait on). */
  halfClose?: boolean
}

interface RawAnswer { status: number | undefined, headers: Record<string, string>, body: string, timedOut: boolean }

/** Fastify's answers to what Node's parser refuses (fastify.js defaultClientErrorHandler). */
const CLIENT_ERROR_BODIES = new Set([
  '{"error":"Bad Request","message":"Client Error","statusCode":400}',
  '{"error":"Request Timeout","message":"Client Timeout","statusCode":408}',
  '{"error":"Request Header Fields Too Large","message":"Exceeded maximum allowed HTTP header size","statusCode":431}'
])

const utf8 = (text: string): string => Buffer.from(text, 'utf8').toString('latin1')

function rawSigned (world: World, g: Gen, method: string, url: string, extra = ''): string {
  const nonce = nonceFor(g)
  // Node reads the request line as Latin-1: sign the URL as the gateway will see it.
  const authorization = defaultAuthorization({ token: world.main.accessToken, nonce, mac: macOf(world.main, method, url, nonce) })
  return `${method} ${url} HTTP/1.1\r\nHost: ${API_HOST}\r\nAuthorization: ${authorization}\r\n${extra}Connection: close\r\n\r\n`
}

function rawProbe (g: Gen, world: World, index: number, phase: string): RawProbe {
  const label = `${phase}#${index}`
  const simple = (method: string, url: string, headers = 'Host: gateway.test\r\n', body = ''): RawProbe =>
    ({ label, bytes: `${method} ${url} HTTP/1.1\r\n${headers}Connection: close\r\n${body === '' ? '' : `Content-Length: ${body.length}\r\n`}\r\n${body}` })
  const path = asSent(g.pick(BASE_PATHS))
  const form = `grant_type=authorization_code&client_id=${world.spare.clientId}&client_secret=${world.spare.clientSecret}&redirect_uri=${enc(REDIRECT_URI)}&code=x`
  const kinds: Array<() => RawProbe> = [
    // Odd methods, some Node's parser knows and some it refuses.
    () => simple(g.pick(['PROPFIND', 'MKCOL', 'TRACE', 'PURGE', 'SEARCH', 'M-SEARCH', 'QUERY', 'FOO', 'get', 'G3T', 'PRI', 'CONNECT', 'UNLOCK', 'SOURCE']), path),
    // Malformed request lines.
    () => ({
      label,
      bytes: g.pick([`GET ${path} HTTP/1.2\r\nHost: x\r\n\r\n`, `GET ${path} HTTP/2.0\r\nHost: x\r\n\r\n`, `GET ${path} HTTP/0.9\r\n\r\n`, `GET  ${path}  HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET ${path}\tHTTP/1.1\r\nHost: x\r\n\r\n`, `GET ${path}\r\n\r\n`, `GET http://evil.example${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 'GET * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', `GET ${path}?x=\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 'GET /a b HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n',
      `GET ${path} HTTP/1.0\r\n\r\n`, `\r\n\r\nGET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, `GET ${path} HTTP/1.1\nHost: x\nConnection: close\n\n`, `GET ${path} http/1.1\r\nHost: x\r\n\r\n`])
    }),
    // Raw paths inject cannot send: dot segments, doubled slashes, bytes that are not UTF-8.
    () => simple(g.pick(['GET', 'POST', 'HEAD']), g.pick(['/../../etc/passwd', '//oauth2//token', '/oauth2/../oauth2/token', '/oauth2/./authorize?client_id=1', '/echo/%2e%2e/user/profile', '/oauth2/authorize#frag',
      '/\xff\xfe', `/oauth2/authorize?state=${utf8('ü')}\xff`, '/oauth2/token?grant_type=\xc3\x28', '/demo/..', '/%2e%2e/%2e%2e/', '/healthz/..', '//', '/.', '/\\oauth2\\token', '/oauth2/token\\..', '/oauth2/signin/../signin', `/${'a/'.repeat(3000)}`])),
    // Broken header syntax.
    () => ({
      label,
      bytes: `GET ${path} HTTP/1.1\r\nHost: x\r\n${g.pick(['Host : y\r\n', 'X-A\r\n', 'X-A: b\r\n c\r\n', 'X-A: b\rc\r\n', 'X-A: \x00\r\n', 'X A: b\r\n', 'X-\xfc: b\r\n', ': b\r\n',
      'Host: y\r\n', 'Content-Length: 1\r\nContent-Length: 2\r\n', 'Content-Length: -1\r\n', 'Content-Length: 1e3\r\n', 'Content-Length: 0x10\r\n', 'Transfer-Encoding: chunked\r\nContent-Length: 3\r\n',
      'Transfer-Encoding: chunked, gzip\r\n', 'Transfer-Encoding: gzip\r\n', 'X-A: b\r\n\r\n\r\n'])}Connection: close\r\n\r\n`
    }),
    // Header bytes that are not UTF-8, and odd names Node accepts.
    () => simple(g.pick(['GET', 'POST']), g.pick(['/oauth2/authorize?client_id=1', '/oauth2/signin', '/oauth2/token', '/user/profile', '/demo/callback?state=a']),
      `Host: gateway.test\r\n${g.pick(['Cookie: macgate_session=\xff\xfe; macgate_demo_state=\xc3\x28', 'Authorization: MAC access_token="\xff", nonce="1:1", mac="\xc3\x28"', 'Authorization: Basic \xff\xfe',
        'X-Macgate-Open-Id: \xc3\x28', 'User-Agent: \x80\x81\xfe', 'Content-Type: application/x-www-form-urlencoded; charset=\xff', '__proto__: x', 'constructor: x', 'X_Macgate_User_Id: root'])}\r\n`, g.chance(0.5) ? 'a=\xff' : ''),
    // Huge and many headers: under Node's 16 KiB the app answers; over it, 431.
    () => simple('GET', g.pick(['/oauth2/signin', '/user/profile', '/oauth2/token', '/healthz']),
      `Host: gateway.test\r\n${g.pick([`X-Pad: ${LONG.slice(0, 7 * 1024)}\r\n`, Array.from({ length: 300 }, (_, n) => `X-H-${n}: ${n}\r\n`).join(''), `X-Pad: ${LONG.slice(0, 17 * 1024)}\r\n`, `Cookie: ${LONG.slice(0, 7000)}\r\n`])}`),
    () => simple('GET', `/oauth2/token?${LONG.slice(0, g.pick([8 * 1024, 17 * 1024]))}`),
    // Signed requests with raw paths and headers: past the MAC check to the proxy.
    () => {
      const url = g.pick(['/echo/../user/profile', '/echo/./a', '/echo/%2e%2e/a', '/echo//a', '/echo/%FF', '/echo/%C3%28', '/echo/a%00b', '/echo/%zz', `/echo/${utf8('ü')}`, '/echo/\xff', '/user/profile/', '/echo/a?%FF=1',
        `/echo/a?token=${world.main.accessToken}`, '/user/profile', '/echo/a?a=1&a=2'])
      const extra = g.pick(['', 'Expect: 100-continue\r\n', 'Upgrade: websocket\r\nConnection: Upgrade\r\n', 'TE: trailers\r\n', 'Authorization: MAC garbage\r\n', 'X-Macgate-Open-Id: evil\r\nX_Macgate_Scope: 1000\r\n',
        'Connection: keep-alive\r\nKeep-Alive: timeout=1\r\n', 'Trailer: Expires\r\n'])
      return { label, bytes: rawSigned(world, g, 'GET', url, extra) }
    },
    () => {
      const url = g.pick(['/echo/post', '/echo/post?x=1'])
      const nonce = nonceFor(g)
      const authorization = defaultAuthorization({ token: world.main.accessToken, nonce, mac: macOf(world.main, 'POST', url, nonce) })
      const body = g.pick(['5\r\nhello\r\n0\r\n\r\n', '5\r\nhello\r\n0\r\nX-Trailer: x\r\n\r\n', 'zz\r\nhello\r\n0\r\n\r\n', '5;ext=1\r\nhello\r\n0\r\n\r\n'])
      return { label, bytes: `POST ${url} HTTP/1.1\r\nHost: ${API_HOST}\r\nAuthorization: ${authorization}\r\nContent-Type: text/plain\r\n${g.pick(['', 'Expect: 100-continue\r\n'])}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body}` }
    },
    // Form bodies chunked, promised but not sent, or after an Expect.
    () => ({ label, bytes: `POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${FORM}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${form.length.toString(16)}\r\n${form}\r\n0\r\n\r\n` }),
    () => ({ label, halfClose: true, bytes: `POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${FORM}\r\nContent-Length: 100\r\n\r\n${form.slice(0, 10)}` }),
    () => ({ label, bytes: `POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${FORM}\r\nExpect: ${g.pick(['100-continue', 'garbage', '200-ok'])}\r\nContent-Length: ${form.length}\r\nConnection: close\r\n\r\n${form}` }),
    // Two requests in one write: the second well-formed or garbage.
    () => ({ label, bytes: `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n${g.pick(['GET /oauth2/token HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'garbage\r\n\r\n', 'GET /\xff HTTP/1.1\r\n\r\n'])}` })
  ]
  return g.pick(kinds)()
}

/** A complete response in `data` (after any 100 Continue), or undefined while more may come. */
function parseRaw (data: Buffer, head: boolean, closed: boolean): Omit<RawAnswer, 'timedOut'> | undefined {
  let offset = 0
  for (;;) {
    const end = data.indexOf('\r\n\r\n', offset)
    if (end === -1) return closed ? { status: undefined, headers: {}, body: '' } : undefined
    const lines = data.subarray(offset, end).toString('latin1').split('\r\n')
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!)?.[1])
    const headers: Record<string, string> = {}
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
    }
    if (status === 100) { offset = end + 4; continue }
    const rest = data.subarray(end + 4)
    if (head || status === 204 || status === 304) return { status, headers, body: '' }
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length'])
      if (rest.length < length) return closed ? { status, headers, body: rest.toString('utf8') } : undefined
      return { status, headers, body: rest.subarray(0, length).toString('utf8') }
    }
    if (headers['transfer-encoding'] === 'chunked') {
      const text = rest.toString('latin1')
      if (!text.includes('0\r\n\r\n') && !closed) return undefined
      return { status, headers, body: Buffer.from(dechunk(text).body, 'latin1').toString('utf8') }
    }
    return closed ? { status, headers, body: rest.toString('utf8') } : undefined
  }
}

async function rawExchange (port: number, probe: RawProbe): Promise<RawAnswer> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let data = Buffer.alloc(0)
    let settled = false
    const head = requestLine(probe)[0] === 'HEAD'
    const finish = (answer: Omit<RawAnswer, 'timedOut'> | undefined, timedOut: boolean): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve({ ...(answer ?? { status: undefined, headers: {}, body: '' }), timedOut })
    }
    const timer = setTimeout(() => finish(parseRaw(data, head, true), true), RAW_TIMEOUT_MS)
    socket.on('connect', () => {
      socket.write(Buffer.from(probe.bytes, 'latin1'))
      if (probe.halfClose === true) socket.end()
    })
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      const answer = parseRaw(data, head, false)
      if (answer !== undefined) finish(answer, false)
    })
    socket.on('close', () => finish(parseRaw(data, head, true), false))
    socket.on('error', () => {})
  })
}

/** The method and target of the first request in `bytes`, as the app would see them. */
function requestLine (probe: RawProbe): [string, string] {
  const [method = '', target = ''] = probe.bytes.slice(0, probe.bytes.search(/\r?\n/)).split(/[ \t]+/)
  return [method, target]
}

function judgeRaw (probe: RawProbe, raw: RawAnswer, outage: boolean): Problem | undefined {
  const shown = `${probe.label}: ${JSON.stringify(probe.bytes.slice(0, 140))}`
  if (raw.timedOut) return ['hang', JSON.stringify(probe.bytes.slice(0, 40)), `${shown} → no answer and no close in ${RAW_TIMEOUT_MS} ms`]
  if (raw.status === undefined) return undefined // closed without an answer
  if (Number.isNaN(raw.status)) return ['raw', 'not HTTP/1.x', `${shown} → not an HTTP/1.x answer`]
  // Node's parser refused it: Fastify's clientError handler writes its answer without a Date header.
  if (raw.status >= 400 && raw.status < 500 && raw.headers.date === undefined && (raw.body === '' || CLIENT_ERROR_BODIES.has(raw.body))) return undefined
  // Node's own answers (417 to an Expect it does not know).
  if (raw.status >= 400 && raw.status < 500 && raw.body === '' && raw.headers['content-type'] === undefined) return undefined
  const [method, url] = requestLine(probe)
  const problem = judge({ label: probe.label, method, url, headers: {}, remoteAddress: '' }, { status: raw.status, headers: raw.headers, body: raw.body }, outage)
  return problem === undefined ? undefined : [problem[0] === '5xx' ? '5xx' : 'raw', problem[1], `${problem[2]} (raw ${JSON.stringify(probe.bytes.slice(0, 140))})`]
}

export async function rawPhase (port: number, g: Gen, world: World, count: number, phase: string, tally: Tally, outage: () => boolean): Promise<void> {
  for (let start = 0; start < count; start += RAW_BATCH) {
    const probes: RawProbe[] = []
    for (let i = start; i < Math.min(start + RAW_BATCH, count); i++) probes.push(rawProbe(g, world, i, phase))
    const answers = await Promise.all(probes.map(async (probe) => await rawExchange(port, probe)))
    probes.forEach((probe, i) => tally.add(answers[i]!.status ?? 0, judgeRaw(probe, answers[i]!, outage())))
  }
}
