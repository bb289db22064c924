// Traces against a real OTLP/HTTP receiver (protobuf, the official proto definitions): the server
// span and its children for a signed request on Redis, the caller's context trusted or linked, a
// refusal's reason, the code flow's spans, the access log's ids, and no secret in any byte sent.
import t from 'tap'
import { RedisStore } from '../../../plugin/index.ts'
import { buildGateway, startTracing, type GatewayTracing } from '../../../gateway/index.ts'
import { echoRoutes, hmac, liveToken, nonceAt, recordingUpstream, signedInject, signedString, defaultAuthorization, API_HOST } from '../../helpers/gateway.ts'
import { memoryLog } from '../../helpers/memory-log.ts'
import { startRedis } from '../../helpers/redis.ts'
import { startOtlpReceiver, type ReceivedSpan } from '../../helpers/otlp-receiver.ts'

const receiver = await startOtlpReceiver(t)
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url
process.env.OTEL_BSP_SCHEDULE_DELAY = '50'
process.env.OTEL_SERVICE_NAME = 'macgate-under-test'
const tracing = (await startTracing(process.env)) as GatewayTracing
t.teardown(async () => await tracing.shutdown())

const redis = await startRedis(t)
const store = await new RedisStore(redis.url, { prefix: redis.prefix }).connect()
const upstream = await recordingUpstream(t)
const log = memoryLog()
let trusted = false
const app = await buildGateway({
  store,
  config: { upstream: upstream.url, routes: [...echoRoutes, { path: '/dead/*', methods: ['GET'], scopes: [], match: 'all', upstream: 'http://127.0.0.1:1' }] },
  logger: { level: 'info', stream: log.stream },
  tracing,
  trustedPeer: () => trusted
})
t.teardown(async () => {
  await app.close()
  await store.close()
})

const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c'
const CALLER_SPAN = 'b7ad6b7169203331'
const tokens = await liveToken(app)
const password = 'correct horse battery'
const macs: string[] = []

/** A signed request whose mac the test keeps, to search the exported bytes for it. */
async function signed (url: string, headers: Record<string, string> = {}, macKey = tokens.macKey) {
  const nonce = nonceAt()
  macs.push(hmac(macKey, signedString({ url, token: tokens.accessToken, macKey, nonce })))
  return await signedInject(app, { url, token: tokens.accessToken, macKey, nonce, headers, authorization: defaultAuthorization })
}

const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan): ReceivedSpan[] => spans.filter((span) => span.parentSpanId === parent.spanId && span.traceId === parent.traceId)

t.test('a trusted caller: its span parents ours; the MAC check, the store and the upstream under it', async (t) => {
  t.ok(tracing, 'an OTLP endpoint turns tracing on')
  trusted = true
  const answer = await signed('/echo/a?x=1', { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, tracestate: 'caller=state', baggage: 'tenant=blue' })
  trusted = false
  t.equal(answer.statusCode, 200)
  const spans = await receiver.waitFor((all) => all.some((span) => span.traceId === CALLER_TRACE && span.kind === 3) && all.some((span) => span.traceId === CALLER_TRACE && span.kind === 2))
  const server = spans.find((span) => span.traceId === CALLER_TRACE && span.kind === 2)!
  t.ok(server, 'the server span is in the caller\'s trace')
  t.equal(server.parentSpanId, CALLER_SPAN, 'a child of the caller\'s span')
  t.equal(server.name, 'GET /echo/*', 'named by the configured route')
  t.match(server.attributes, {
    'http.request.method': 'GET',
    'http.route': '/echo/*',
    'http.response.status_code': 200,
    'url.path': '/echo/a',
    'server.address': API_HOST,
    'client.address': '127.0.0.1',
    'network.protocol.version': '1.1',
    'macgate.client_id': tokens.clientId
  })
  t.equal(server.resource['service.name'], 'macgate-under-test', 'OTEL_SERVICE_NAME')
  t.type(server.resource['service.instance.id'], 'string', 'an instance id of the process')
  const children = childrenOf(spans, server)
  const verify = children.find((span) => span.name === 'macgate.verify')!
  t.match(verify.attributes, { 'macgate.client_id': tokens.clientId, 'macgate.outcome': 'verified', 'macgate.token_cache': 'miss' })
  const tokenRead = children.find((span) => span.name === 'mget')!
  t.match(tokenRead.attributes, { 'db.system.name': 'redis', 'db.operation.name': 'mget' }, 'the token read on a miss (the turn\'s MGET)')
  const batch = children.find((span) => span.name === 'macgateUseNonces')!
  t.match(batch.attributes, { 'db.system.name': 'redis', 'macgate.nonce_batch.size': 1 }, 'the nonce batch, with its size')
  const client = children.find((span) => span.kind === 3 && span.name === 'GET')!
  t.match(client.attributes, { 'http.response.status_code': 200, 'server.address': '127.0.0.1', 'macgate.upstream': upstream.url })
  const received = upstream.requests.at(-1)!
  const lines = received.rawHeaders.filter((_value, index) => index % 2 === 0 && received.rawHeaders[index]!.toLowerCase() === 'traceparent')
  t.equal(lines.length, 1, 'the upstream gets exactly one traceparent')
  t.equal(received.headers.traceparent, `00-${CALLER_TRACE}-${client.spanId}-01`, 'naming macgate\'s client span, in the same trace')
  const states = received.rawHeaders.filter((_value, index) => index % 2 === 0 && received.rawHeaders[index]!.toLowerCase() === 'tracestate')
  t.equal(states.length, 1, 'one tracestate: the trusted trace\'s, carried on by the propagator (W3C)')
  t.equal(received.headers.baggage, 'tenant=blue', 'a trusted caller\'s baggage goes on')
  const line = log.lines.find((entry) => entry.msg === 'request' && entry.trace_id === CALLER_TRACE)
  t.equal(line?.span_id, server.spanId, 'the access line carries the trace and span ids')

  const again = await signed('/echo/b')
  t.equal(again.statusCode, 200)
  const hit = await receiver.waitFor((all) => all.some((span) => span.name === 'macgate.verify' && span.attributes['macgate.token_cache'] === 'hit'))
  t.ok(hit, 'the next check is a cache hit')
})

t.test('an untrusted caller\'s context is a link, not a parent; nothing of it reaches the upstream', async (t) => {
  const answer = await signed('/user/profile', { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, tracestate: 'caller=state', baggage: 'tenant=red' })
  t.equal(answer.statusCode, 200)
  const spans = await receiver.waitFor((all) => all.some((span) => span.name === 'GET /user/profile'))
  const server = spans.find((span) => span.name === 'GET /user/profile')!
  t.not(server.traceId, CALLER_TRACE, 'a trace of its own')
  t.equal(server.parentSpanId, '', 'a root span')
  t.same(server.links, [{ traceId: CALLER_TRACE, spanId: CALLER_SPAN }], 'the caller\'s context kept as a link')
  // The sample API is the upstream here (in process); its request headers are checked on /echo below.
  const echoed = await signed('/echo/c', { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, baggage: 'tenant=red', tracestate: 'caller=state' })
  t.equal(echoed.statusCode, 200)
  const received = upstream.requests.at(-1)!
  t.notMatch(received.headers.traceparent, CALLER_TRACE, 'the upstream never sees the caller\'s trace')
  t.equal(received.headers.baggage, undefined, 'nor its baggage')
  t.equal(received.headers.tracestate, undefined, 'nor its tracestate')
})

t.test('a nonce batch shared by concurrent requests: one span with its size, linked to every request it served', async (t) => {
  const paths = Array.from({ length: 6 }, (_value, index) => `/echo/batch-${index}`)
  const answers = await Promise.all(paths.map(async (path) => await signed(path)))
  t.ok(answers.every((answer) => answer.statusCode === 200))
  const spans = await receiver.waitFor((all) => paths.every((path) => all.some((span) => span.kind === 2 && span.attributes['url.path'] === path)))
  const servers = paths.map((path) => spans.find((span) => span.kind === 2 && span.attributes['url.path'] === path)!)
  const ids = new Set(servers.map((server) => server.spanId))
  const batches = spans.filter((span) => span.name === 'macgateUseNonces' && span.links.some((link) => ids.has(link.spanId)))
  const linked = batches.flatMap((batch) => batch.links.map((link) => link.spanId))
  t.same(linked.sort(), [...ids].sort(), 'each request linked from exactly one batch span')
  for (const server of servers) {
    const batch = batches.find((span) => span.links.some((link) => link.spanId === server.spanId))!
    t.ok(batch.links.some((link) => link.spanId === server.spanId && link.traceId === server.traceId), 'the link names the request\'s trace and span')
  }
  for (const batch of batches) {
    t.equal(batch.attributes['macgate.nonce_batch.size'], batch.links.length, 'as many links as nonces: every request of the batch is sampled here')
    const first = servers.find((server) => server.spanId === batch.links[0]!.spanId)!
    t.equal(batch.parentSpanId, first.spanId, 'a child of the first request it served')
    t.equal(batch.traceId, first.traceId)
  }
  t.ok(batches.some((batch) => batch.links.length > 1), 'requests of one turn share a batch')
})

t.test('token reads of one turn: one MGET span linked to every request it served; each request\'s nonce linked as its own', async (t) => {
  // Tokens never used yet: every request misses the cache, and the turn's reads go in one MGET.
  const fresh = await Promise.all(Array.from({ length: 5 }, async () => await liveToken(app)))
  const paths = fresh.map((_token, index) => `/echo/miss-${index}`)
  const answers = await Promise.all(fresh.map(async (token, index) => {
    const nonce = nonceAt()
    macs.push(hmac(token.macKey, signedString({ url: paths[index]!, token: token.accessToken, macKey: token.macKey, nonce })))
    return await signedInject(app, { url: paths[index]!, token: token.accessToken, macKey: token.macKey, nonce, authorization: defaultAuthorization })
  }))
  t.ok(answers.every((answer) => answer.statusCode === 200))
  const spans = await receiver.waitFor((all) => paths.every((path) => all.some((span) => span.kind === 2 && span.attributes['url.path'] === path)))
  const servers = paths.map((path) => spans.find((span) => span.kind === 2 && span.attributes['url.path'] === path)!)
  const ids = new Set(servers.map((server) => server.spanId))
  for (const name of ['mget', 'macgateUseNonces']) {
    const commands = spans.filter((span) => span.name === name && span.links.some((link) => ids.has(link.spanId)))
    const linked = commands.flatMap((command) => command.links.map((link) => link.spanId))
    t.same(linked.sort(), [...ids].sort(), `${name}: each request linked from exactly one span (none twice, none left out)`)
    for (const command of commands) {
      const first = servers.find((server) => server.spanId === command.links[0]!.spanId)!
      t.equal(command.parentSpanId, first.spanId, `${name}: a child of the first request it served`)
    }
    if (name === 'mget') t.ok(commands.some((command) => command.links.length > 1), 'misses of one turn share an MGET')
  }
})

t.test('a refused request\'s spans carry the reason and the code; a 4xx is no span error', async (t) => {
  const answer = await signed('/echo/refused', {}, 'not-the-mac-key')
  t.equal(answer.statusCode, 401)
  const spans = await receiver.waitFor((all) => all.some((span) => span.attributes['url.path'] === '/echo/refused'))
  const server = spans.find((span) => span.attributes['url.path'] === '/echo/refused')!
  t.match(server.attributes, { 'macgate.outcome': 'mac_mismatch', 'macgate.error_code': 96012, 'http.response.status_code': 401 })
  t.equal(server.status.code, 0, 'unset status: the caller\'s mistake')
  const verify = childrenOf(spans, server).find((span) => span.name === 'macgate.verify')!
  t.match(verify.attributes, { 'macgate.outcome': 'mac_mismatch', 'macgate.error_code': 96012, 'macgate.token_cache': 'hit' })
  t.notOk(childrenOf(spans, server).some((span) => span.kind === 3 && span.name === 'GET'), 'no upstream span')
  const missing = await app.inject({ url: '/nowhere/at/all', headers: { host: API_HOST } })
  t.equal(missing.statusCode, 404)
  const unrouted = (await receiver.waitFor((all) => all.some((span) => span.attributes['url.path'] === '/nowhere/at/all'))).find((span) => span.attributes['url.path'] === '/nowhere/at/all')!
  t.equal(unrouted.name, 'GET', 'no route: the method alone')
  t.equal(unrouted.attributes['http.route'], undefined)
})

t.test('the code flow: sign-in, consent and the token exchange with grant type, client and outcome', async (t) => {
  const spans = await receiver.waitFor((all) => all.some((span) => span.name === 'GET /oauth2/token'))
  const exchange = spans.find((span) => span.name === 'GET /oauth2/token')!
  t.match(exchange.attributes, { 'macgate.grant_type': 'authorization_code', 'macgate.client_id': tokens.clientId, 'macgate.outcome': 'issued', 'http.response.status_code': 200 })
  t.ok(childrenOf(spans, exchange).some((span) => span.name === 'macgateRedeemCode'), 'the store\'s redeem script under it')
  const consent = spans.find((span) => span.name === 'POST /oauth2/authorize')!
  t.match(consent.attributes, { 'macgate.outcome': 'consent_given', 'macgate.client_id': tokens.clientId }, 'the first event says how it ended')
  t.ok(spans.some((span) => span.name === 'POST /oauth2/signin'), 'the sign-in')
  const basic = `Basic ${Buffer.from(`${tokens.clientId}:wrong`).toString('base64')}`
  const refused = await app.inject({ method: 'POST', url: '/oauth2/token', payload: `grant_type=refresh_token&refresh_token=${tokens.refreshToken}`, headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic } })
  t.equal(refused.statusCode, 401)
  const failedSpan = (await receiver.waitFor((all) => all.some((span) => span.name === 'POST /oauth2/token'))).find((span) => span.name === 'POST /oauth2/token')!
  t.match(failedSpan.attributes, { 'macgate.grant_type': 'refresh_token', 'macgate.client_id': tokens.clientId, 'macgate.outcome': 'invalidClient' })
  t.type(failedSpan.attributes['macgate.error_code'], 'number')
})

t.test('an upstream that is not there: 502, and the server and upstream spans are errors', async (t) => {
  const answer = await signed('/dead/x')
  t.equal(answer.statusCode, 502)
  const spans = await receiver.waitFor((all) => all.some((span) => span.name === 'GET /dead/*'))
  const server = spans.find((span) => span.name === 'GET /dead/*')!
  t.match(server, { status: { code: 2 }, attributes: { 'error.type': '502', 'http.response.status_code': 502 } })
  const client = childrenOf(spans, server).find((span) => span.kind === 3 && span.name === 'GET')!
  t.match(client, { status: { code: 2 }, attributes: { 'error.type': '502', 'server.port': 1 } })
})

t.test('Redis gone under a turn of misses: each request answered 503 in its own trace, the MGET span failed and linked to each', async (t) => {
  const fresh = await Promise.all(Array.from({ length: 3 }, async () => await liveToken(app)))
  await redis.stop()
  t.teardown(async () => { await redis.start() })
  const paths = fresh.map((_token, index) => `/echo/outage-${index}`)
  const answers = await Promise.all(fresh.map(async (token, index) => await signedInject(app, { url: paths[index]!, token: token.accessToken, macKey: token.macKey, authorization: defaultAuthorization })))
  t.same(answers.map((answer) => answer.statusCode), [503, 503, 503], 'the store outage, for every request of the turn')
  const spans = await receiver.waitFor((all) => paths.every((path) => all.some((span) => span.kind === 2 && span.attributes['url.path'] === path)))
  const servers = paths.map((path) => spans.find((span) => span.kind === 2 && span.attributes['url.path'] === path)!)
  t.ok(servers.every((server) => server.attributes['http.response.status_code'] === 503 && server.status.code === 2), 'each server span a 503 and an error')
  const ids = new Set(servers.map((server) => server.spanId))
  const reads = spans.filter((span) => span.name === 'mget' && span.links.some((link) => ids.has(link.spanId)))
  t.same(reads.flatMap((read) => read.links.map((link) => link.spanId)).sort(), [...ids].sort(), 'each request linked from exactly one MGET span')
  t.ok(reads.every((read) => read.status.code === 2 && read.status.message === 'store unavailable'), 'the MGET span failed')
  for (const server of servers) {
    const verify = childrenOf(spans, server).find((span) => span.name === 'macgate.verify')
    t.equal(verify?.attributes['macgate.outcome'], 'store_unavailable', 'the check under its own request ends as the outage')
  }
})

t.test('no secret in any exported byte', async (t) => {
  await receiver.waitFor((all) => all.some((span) => span.name === 'POST /oauth2/token'))
  await tracing.shutdown().catch(() => {})
  const sent = Buffer.concat(receiver.bodies)
  t.ok(receiver.contentTypes.every((type) => type.startsWith('application/x-protobuf')), 'protobuf, the default protocol')
  const secrets = { accessToken: tokens.accessToken, macKey: tokens.macKey, refreshToken: tokens.refreshToken, clientSecret: tokens.clientSecret, code: tokens.code, password, grantId: tokens.accessToken.split('.')[0]!, codeGrant: tokens.code.split('.')[0]! }
  for (const [name, value] of Object.entries(secrets)) t.equal(sent.indexOf(value), -1, `no ${name}`)
  for (const mac of macs) t.equal(sent.indexOf(mac), -1, 'no mac')
  t.equal(sent.indexOf('tenant=blue'), -1, 'no baggage')
  t.equal(sent.indexOf('x=1'), -1, 'no query')
})

t.test('the dropped-spans counter is on the metrics', async (t) => {
  const text = await app.macgate.metrics.registry.metrics()
  t.match(text, /# TYPE macgate_trace_spans_dropped_total counter/)
})
