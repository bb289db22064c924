// Upstreams that fail, hang or are many (issue 19), against real upstreams on loopback: what the
// caller gets for each failure, the timeouts, the cancellation of an abandoned request, per-route
// upstreams with their own pools and bound, balancing with passive health, and safe retries.
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { connect, createServer as createNetServer } from 'node:net'
import { once } from 'node:events'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildGateway } from '../../../gateway/index.ts'
import type { GatewayConfig, RouteRule } from '../../../gateway/config/gateway-config.ts'
import { MemoryStore } from '../../../plugin/index.ts'
import { API_HOST, defaultAuthorization, hmac, liveToken, nonceAt, signedInject, signedString, type LiveTokens } from '../../helpers/gateway.ts'
import { steppedClock, type SteppedClock } from '../../helpers/clock.ts'
import { eventually } from '../../helpers/live.ts'
import { memoryLog } from '../../helpers/memory-log.ts'
import { parseMetrics } from '../../helpers/metrics-text.ts'
import { answerFor, causeOf } from '../../../gateway/open-api/upstreams/failure.ts'
import { FailureLog } from '../../../gateway/open-api/upstreams/failure-log.ts'
import { recordingUpstream } from '../../helpers/gateway.ts'
import { answeringUpstream, hangingUpstream, httpUpstream, refusingUpstream, resettingUpstream, tricklingUpstream } from '../../helpers/faulty-upstream.ts'

const QUICK = { connectMs: 300, headersMs: 300, bodyIdleMs: 300 }

function route (path: string, upstream: string | string[], extra: Partial<RouteRule> = {}): RouteRule {
  return { path, methods: ['GET', 'HEAD', 'POST'], scopes: [], match: 'all', upstream, ...extra }
}

interface Gateway {
  app: FastifyInstance
  /** The gateway's clock: real time plus what the test stepped. */
  clock: SteppedClock
  log: ReturnType<typeof memoryLog>
  token: LiveTokens
  call: (url: string, method?: string, payload?: string) => ReturnType<typeof signedInject>
}

async function gateway (t: Test, config: Partial<GatewayConfig>): Promise<Gateway> {
  const log = memoryLog()
  const store = new MemoryStore()
  const clock = steppedClock()
  const app = await buildGateway({ store, config: { timeouts: QUICK, ...config }, logger: { level: 'info', stream: log.stream }, clock: clock.now })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  const token = await liveToken(app)
  const call = async (url: string, method = 'GET', payload?: string) => await signedInject(app, { url, method, token: token.accessToken, macKey: token.macKey, ...(payload !== undefined && { payload, headers: { 'content-type': 'text/plain' } }) })
  return { app, clock, log, token, call }
}

/** A signed request over real HTTP to a listening gateway; resolves when its response starts. */
function signedHttp (port: number, token: LiveTokens, path: string): { request: ReturnType<typeof httpRequest>, response: Promise<IncomingMessage> } {
  const nonce = nonceAt()
  const mac = hmac(token.macKey, signedString({ url: path, nonce, token: token.accessToken, macKey: token.macKey }))
  const request = httpRequest({ port, host: '127.0.0.1', path, headers: { host: API_HOST, authorization: defaultAuthorization({ token: token.accessToken, nonce, mac }) } })
  request.on('error', () => {})
  const response = once(request, 'response').then(([response]) => response as IncomingMessage)
  response.catch(() => {})
  request.end()
  return { request, response }
}

function failureLines (log: Gateway['log'], cause: string): Array<Record<string, unknown>> {
  return log.lines.filter((line) => line.msg === 'upstream request failed' && line.cause === cause)
}

t.test('each failure in the contract\'s form, logged once a second at most, without a stack', async (t) => {
  const refusing = await refusingUpstream(t)
  const resetting = await resettingUpstream(t)
  const hanging = await hangingUpstream(t)
  const tlsToPlain = await answeringUpstream(t)
  const tlsHanging = await hangingUpstream(t, 'https')
  const slow = await answeringUpstream(t, 'slow', 100)
  const { call, log } = await gateway(t, {
    routes: [
      route('/refused/*', refusing.url),
      route('/reset/*', resetting.url),
      route('/hang/*', hanging.url),
      route('/tls/*', tlsToPlain.url.replace('http:', 'https:')),
      route('/handshake/*', tlsHanging.url),
      route('/dns/*', 'http://upstream.macgate-test.invalid'),
      route('/slow/*', slow.url)
    ]
  })
  const rows: Array<[string, number, string]> = [
    ['/refused/x', 502, 'refused'],
    ['/reset/x', 502, 'reset'],
    ['/hang/x', 504, 'headers_timeout'],
    ['/tls/x', 502, 'tls'],
    ['/handshake/x', 504, 'connect_timeout']
  ]
  for (const [path, status, cause] of rows) {
    const answer = await call(path)
    t.equal(answer.statusCode, status, `${cause}: ${status}`)
    t.same(answer.json(), { result: 'error', description: status === 504 ? 'upstream did not answer in time' : 'upstream unavailable', code: status }, `${cause}: the open API's error`)
    t.equal(failureLines(log, cause).length, 1, `${cause}: one warn line naming the cause`)
  }
  const dns = await call('/dns/x')
  t.ok([502, 504].includes(dns.statusCode), `an unknown host: ${dns.statusCode} (502, or 504 if the resolver is slower than the connect timeout)`)
  t.equal((await call('/slow/x')).statusCode, 200, 'an answer slower than nothing but within the timeout passes')

  // A down upstream under load: 40 more refusals within the second write no line of their own.
  await Promise.all(Array.from({ length: 40 }, async () => await call('/refused/y')))
  const refusedLines = failureLines(log, 'refused')
  t.ok(refusedLines.length <= 2, `at most one line a second per cause (${refusedLines.length} for 41 refusals)`)
  t.notOk(log.lines.some((line) => JSON.stringify(line).includes('"stack"')), 'no stack anywhere in the log')
  t.notOk(log.lines.some((line) => line.msg === 'response errored'), 'reply-from\'s own line per failure stays out')
  t.equal(log.lines.filter((line) => line.level === 50).length, 0, 'nothing at error level')
})

t.test('a body that stalls after the headers ends the response: the caller sees it cut', async (t) => {
  const trickling = await tricklingUpstream(t)
  const { app, token, log } = await gateway(t, { routes: [route('/trickle/*', trickling.url)] })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { response } = signedHttp((app.server.address() as { port: number }).port, token, '/trickle/x')
  const answer = await response
  t.equal(answer.statusCode, 200, 'the headers went out')
  const chunks: Buffer[] = []
  answer.on('error', () => {})
  answer.on('data', (chunk: Buffer) => chunks.push(chunk))
  const ended = await new Promise((resolve) => answer.on('close', () => { resolve(answer.complete ? 'end' : 'cut') }))
  t.equal(ended, 'cut', 'the response was cut, not completed')
  t.ok(Buffer.concat(chunks).length < 1000, 'short of its content-length')
  t.ok(await eventually(async () => failureLines(log, 'body_timeout').length === 1, 2000, 20), 'logged as a body timeout')
})

t.test('an abandoned request is cancelled upstream within a second', async (t) => {
  const hanging = await hangingUpstream(t)
  const { app, token } = await gateway(t, { routes: [route('/hang/*', hanging.url)], timeouts: { connectMs: 1000, headersMs: 60_000, bodyIdleMs: 60_000 } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { request } = signedHttp((app.server.address() as { port: number }).port, token, '/hang/x')
  t.ok(await eventually(async () => hanging.received.length === 1, 5000, 10), 'the request reached the upstream')
  const leftAt = Date.now()
  request.destroy()
  t.ok(await eventually(async () => hanging.sockets[0]?.closedAt !== undefined, 1000, 10), 'the upstream saw its socket closed')
  t.ok(hanging.sockets[0]!.closedAt! - leftAt < 1000, `within a second of the caller leaving (${hanging.sockets[0]!.closedAt! - leftAt} ms)`)
})

t.test('a slow service fills its own pool only: past its bound 503 at once, other routes unaffected', async (t) => {
  const hanging = await hangingUpstream(t)
  const other = await answeringUpstream(t, 'other')
  const { call, app } = await gateway(t, {
    routes: [route('/slow/*', hanging.url), route('/other/*', other.url)],
    // Long enough for the checks below to see the four held; each pair then waits it out in turn.
    timeouts: { connectMs: 1000, headersMs: 1500, bodyIdleMs: 1500 },
    upstreamPool: { connections: 2, maxWaiting: 2, ejectAfterFailures: 3, ejectMs: 10_000 }
  })
  // 4 fill the slow service's pool and its waiting room (2 connections + 2 waiting).
  const held = Array.from({ length: 4 }, async () => await call('/slow/x'))
  t.ok(await eventually(async () => hanging.received.length === 2, 2000, 10), 'two reached the slow service, two wait')
  const busy = await call('/slow/y')
  t.equal(busy.statusCode, 503, 'the next is refused')
  t.same(busy.json(), { result: 'error', description: 'upstream busy', code: 503 })
  // One after another: the other service has the same bound of its own.
  const others = []
  for (let i = 0; i < 10; i++) others.push(await call('/other/x'))
  t.same(others.map((answer) => answer.statusCode), Array(10).fill(200), 'another route\'s service answers meanwhile')
  t.same(others[0]!.json().data, { name: 'other' })
  const metrics = parseMetrics(await app.macgate.metrics.registry.metrics())
  t.equal(metrics.value('macgate_upstream_waiting', { upstream: hanging.url, state: 'awaiting' }), 4, 'four await the slow service')
  t.equal(metrics.value('macgate_upstream_failures_total', { upstream: hanging.url, cause: 'busy' }), 1)
  const statuses = (await Promise.all(held)).map((answer) => answer.statusCode)
  t.same(statuses, [504, 504, 504, 504], 'the held ones time out in the end')
})

t.test('three instances, one killed under load: 502 only for what was in flight on it; ejected, then back after its cool-down', async (t) => {
  const instances = await Promise.all(['a', 'b', 'c'].map(async (name) => await answeringUpstream(t, name)))
  const { call, app, clock } = await gateway(t, {
    routes: [route('/api/*', instances.map((instance) => instance.url))],
    upstreamPool: { connections: 8, maxWaiting: 100, ejectAfterFailures: 2, ejectMs: 500 }
  })
  const names = new Set<string>()
  for (let i = 0; i < 6; i++) names.add(((await call('/api/x')).json().data as { name: string }).name)
  t.same([...names].sort(), ['a', 'b', 'c'], 'round robin reaches every instance')

  // Eight callers in a loop; the third instance dies (its port closed, its connections dropped)
  // after the first few. A GET it refuses goes to another instance; only requests already sent to
  // it when it died can fail: 502, in that moment only.
  const answers: Array<{ status: number, at: number }> = []
  let killedAt = 0
  await Promise.all(Array.from({ length: 8 }, async (_, worker) => {
    for (let i = 0; i < 25; i++) {
      if (worker === 0 && i === 5) {
        killedAt = Date.now()
        await instances[2]!.kill()
      }
      const status = (await call('/api/x')).statusCode
      answers.push({ status, at: Date.now() })
    }
  }))
  const failed = answers.filter((answer) => answer.status !== 200)
  t.ok(failed.every((answer) => answer.status === 502), 'nothing but 200 and 502')
  t.ok(failed.length <= 8, `502 only for what was in flight on the dying instance: ${failed.length} of ${answers.length}`)
  const window = failed.length === 0 ? 0 : Math.max(...failed.map((answer) => answer.at - killedAt))
  t.comment(`502s within ${window} ms of the kill; ${answers.length - failed.length} answered 200`)
  const metrics = parseMetrics(await app.macgate.metrics.registry.metrics())
  const name = instances.map((instance) => instance.url).join(',')
  const ejections = metrics.value('macgate_upstream_ejections_total', { upstream: name })!
  t.ok(ejections >= 1, `the dead instance was ejected (${ejections} times: each cool-down lets one request try it again)`)
  t.ok(metrics.value('macgate_upstream_failures_total', { upstream: name, cause: 'refused' })! >= 2, 'after its refusals')
  // The cool-down runs on the gateway's clock: stepped past it.
  clock.step(600)
  const refusedBefore = parseMetrics(await app.macgate.metrics.registry.metrics()).value('macgate_upstream_failures_total', { upstream: name, cause: 'refused' })!
  const before = instances[0]!.received.length + instances[1]!.received.length
  for (let i = 0; i < 10; i++) t.equal((await call('/api/x')).statusCode, 200)
  t.equal(instances[0]!.received.length + instances[1]!.received.length - before, 10, 'the others took every request')
  const after = parseMetrics(await app.macgate.metrics.registry.metrics())
  t.equal(after.value('macgate_upstream_failures_total', { upstream: name, cause: 'refused' }), refusedBefore + 1, 'after its cool-down the dead one was tried once more (refused, and that GET retried elsewhere)')
  t.equal(after.value('macgate_upstream_ejections_total', { upstream: name }), ejections + 1, 'and ejected again at once')
})

t.test('all instances out: 502 at once', async (t) => {
  const a = await refusingUpstream(t)
  const b = await refusingUpstream(t)
  const { call, log } = await gateway(t, {
    routes: [route('/api/*', [a.url, b.url])],
    upstreamPool: { connections: 2, maxWaiting: 10, ejectAfterFailures: 1, ejectMs: 60_000 }
  })
  t.equal((await call('/api/x')).statusCode, 502, 'refused by both (the retry included)')
  const answer = await call('/api/x')
  t.equal(answer.statusCode, 502)
  t.same(answer.json(), { result: 'error', description: 'upstream unavailable', code: 502 })
  t.equal(failureLines(log, 'no_instance').length, 1, 'logged as no instance')
})

t.test('retries: a refused GET goes to another instance once; a POST, a reset GET or a 503 never again', async (t) => {
  const counting = await httpUpstream(t, (request, response) => {
    response.statusCode = request.url === '/api/busy' ? 503 : 200
    response.setHeader('retry-after', '1')
    response.end('{}')
  })
  const refusing = await refusingUpstream(t)
  const resetting = await resettingUpstream(t)
  const { call } = await gateway(t, {
    routes: [route('/api/*', [refusing.url, counting.url]), route('/reset/*', [resetting.url, counting.url])],
    upstreamPool: { connections: 2, maxWaiting: 10, ejectAfterFailures: 100, ejectMs: 60_000 }
  })
  for (let i = 0; i < 4; i++) t.equal((await call('/api/x')).statusCode, 200, 'a GET: every one answered')
  t.equal(counting.received.length, 4, 'each once')
  const posts = await Promise.all(Array.from({ length: 4 }, async () => (await call('/api/x', 'POST', 'a body')).statusCode))
  t.same(posts.sort(), [200, 200, 502, 502], 'a POST refused is answered 502, not sent again')
  t.equal(counting.received.filter((seen) => seen.method === 'POST').length, 2, 'the counting instance got only its own two POSTs')
  const resets = await Promise.all(Array.from({ length: 4 }, async () => (await call('/reset/x')).statusCode))
  t.same(resets.sort(), [200, 200, 502, 502], 'a GET reset after it was sent is not sent again')
  t.equal(resetting.received.length, 2)
  const before = counting.received.length
  const busy = await call('/api/busy')
  const busyAgain = busy.statusCode === 503 ? busy : await call('/api/busy')
  t.equal(busyAgain.statusCode, 503, 'the upstream\'s 503 is passed on, with its Retry-After')
  t.equal(busyAgain.headers['retry-after'], '1')
  t.ok(counting.received.length - before <= 2, 'and not repeated (maxRetriesOn503 is off)')
})

t.test('header-incomplete client connections are closed after clientTimeouts.headersMs', async (t) => {
  const { app } = await gateway(t, { clientTimeouts: { headersMs: 300, requestMs: 0, keepAliveMs: 5000, checkIntervalMs: 100 } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const socket = connect((app.server.address() as { port: number }).port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write('GET /user/profile HTTP/1.1\r\nHost: api.example.com\r\n')
  const received: Buffer[] = []
  socket.on('data', (chunk: Buffer) => received.push(chunk))
  socket.on('error', () => {})
  t.ok(await eventually(async () => socket.destroyed || socket.readableEnded, 3000, 20), 'closed by the gateway')
  t.match(Buffer.concat(received).toString('latin1'), /^(HTTP\/1\.1 408|)/, 'with a 408, or just closed')
})

t.test('causes: undici\'s and the socket\'s codes, each to its answer', async (t) => {
  const coded = (code?: string): Error => Object.assign(new Error(code ?? 'no code'), code === undefined ? {} : { code })
  const table: Array<[string | undefined, string, number]> = [
    ['ECONNREFUSED', 'refused', 502], ['ECONNRESET', 'reset', 502], ['EPIPE', 'reset', 502], ['UND_ERR_SOCKET', 'reset', 502],
    ['ENOTFOUND', 'dns', 502], ['EAI_AGAIN', 'dns', 502], ['EAI_FAIL', 'dns', 502],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls', 502], ['ERR_SSL_WRONG_VERSION_NUMBER', 'tls', 502], ['DEPTH_ZERO_SELF_SIGNED_CERT', 'tls', 502],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'tls', 502], ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'tls', 502], ['CERT_HAS_EXPIRED', 'tls', 502], ['EPROTO', 'tls', 502],
    ['UND_ERR_CONNECT_TIMEOUT', 'connect_timeout', 504], ['UND_ERR_HEADERS_TIMEOUT', 'headers_timeout', 504],
    ['UND_ERR_BODY_TIMEOUT', 'body_timeout', 502], ['UND_ERR_ABORTED', 'caller_gone', 502],
    ['UND_ERR_INVALID_ARG', 'other', 502], [undefined, 'other', 502]
  ]
  for (const [code, cause, status] of table) {
    t.equal(causeOf(coded(code)), cause, `${String(code)} is ${cause}`)
    t.equal(answerFor(causeOf(coded(code))).statusCode, status)
  }
  t.match(answerFor('busy'), { statusCode: 503, errno: 503, message: 'upstream busy' })
})

t.test('an answer Node could not send on (a control character in a header value): 502, and the upstream is used again', async (t) => {
  let answers = 0
  // A raw upstream: node:http would refuse to write such a header. The first answer is bad, the next ones good.
  const server = createNetServer((socket) => {
    socket.on('data', () => {
      const bad = answers++ === 0
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n${bad ? 'x-bad: a\u0001b\r\n' : ''}content-length: 2\r\n\r\n{}`, 'latin1')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const { port } = server.address() as { port: number }
  const { call, log } = await gateway(t, { routes: [route('/raw/*', `http://127.0.0.1:${port}`)] })
  const bad = await call('/raw/x')
  t.equal(bad.statusCode, 502, 'the caller gets 502')
  t.same(bad.json(), { result: 'error', description: 'upstream unavailable', code: 502 })
  t.equal(failureLines(log, 'other').length, 1, 'logged once')
  const good = await call('/raw/y')
  t.equal(good.statusCode, 200, 'the next answer passes')
  t.same(good.json(), {})
})

t.test('the failure log: one line a second per upstream and cause, with the count left out', async (t) => {
  const log = memoryLog()
  const { default: pino } = await import('pino')
  const clock = steppedClock(10_000)
  const failures = new FailureLog(pino(log.stream), clock.now)
  for (let i = 0; i < 5; i++) failures.failed('http://a', 'http://a', 'refused', new Error('connect ECONNREFUSED'))
  failures.failed('http://a', 'http://a', 'reset', new Error('other side closed'))
  failures.failed('http://b', 'http://b', 'refused', new Error('connect ECONNREFUSED'))
  failures.failed('http://a', 'http://a', 'caller_gone', new Error('aborted'))
  clock.step(999)
  failures.failed('http://a', 'http://a', 'refused', undefined)
  clock.step(1)
  failures.failed('http://a', 'http://a', 'refused', undefined)
  await new Promise((resolve) => setImmediate(resolve))
  t.same(log.lines.map(({ upstream, cause, suppressed }) => [upstream, cause, suppressed]), [
    ['http://a', 'refused', 0], ['http://a', 'reset', 0], ['http://b', 'refused', 0], ['http://a', 'refused', 5]
  ], 'the first of each, then the next a second later with the five left out; a caller leaving is no line')
  t.equal(log.lines[0]!.reason, 'connect ECONNREFUSED')
  new FailureLog(undefined).failed('http://a', 'http://a', 'refused', undefined)
  new FailureLog(undefined).ejected('http://a', 'http://a', 3, 10)
})

t.test('an upstream URL\'s path goes before the request\'s; Host is the instance\'s own', async (t) => {
  const upstream = await recordingUpstream(t)
  const { call } = await gateway(t, { routes: [route('/echo/*', `${upstream.url}/base/`)] })
  t.equal((await call('/echo/x?a=1')).statusCode, 200)
  t.equal(upstream.requests[0]!.url, '/base/echo/x?a=1')
  t.equal(upstream.requests[0]!.headers.host, upstream.url.slice('http://'.length))
})

t.test('failures count in a row: an answer in between starts the count again', async (t) => {
  // Odd requests are answered well after the headers timeout (undici's timer for it ticks every half
  // second: a 300 ms timeout fires within about 1.3 s), even ones at once.
  const flaky = await httpUpstream(t, (_request, response, n) => {
    const answer = (): void => { response.end('{}') }
    if (n % 2 === 1) setTimeout(answer, 2000).unref()
    else answer()
  })
  const { call } = await gateway(t, {
    routes: [route('/api/*', flaky.url)],
    upstreamPool: { connections: 4, maxWaiting: 10, ejectAfterFailures: 2, ejectMs: 60_000 }
  })
  t.same([(await call('/api/1')).statusCode, (await call('/api/2')).statusCode, (await call('/api/3')).statusCode, (await call('/api/4')).statusCode], [504, 200, 504, 200], 'never two in a row: never skipped')
})
