// Sampling from the environment (parentbased_traceidratio at 0) and the http/json protocol: an
// untrusted caller's sampled flag decides nothing, a trusted caller's does; unsampled requests
// hand the upstream no trace headers, and their access lines carry no ids.
import t from 'tap'
import { buildGateway } from '../../../gateway/index.ts'
import { echoRoutes, signedInject } from '../../helpers/gateway.ts'
import { tracedGateway } from '../../helpers/traced-gateway.ts'
import { startOtlpReceiver } from '../../helpers/otlp-receiver.ts'

const receiver = await startOtlpReceiver(t)
let trusted = false
const { tracing, store, upstream, app, log, tokens } = await tracedGateway(t, {
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
  OTEL_TRACES_SAMPLER_ARG: '0',
  OTEL_BSP_SCHEDULE_DELAY: '50'
}, { trustedPeer: () => trusted })
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'
const traceparent = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`
// Every span the gateway starts goes through its tracer's startSpan (the SDK's), recorded or not.
const startSpan = tracing.tracer.startSpan.bind(tracing.tracer)
let started = 0
tracing.tracer.startSpan = (...args) => {
  started++
  return startSpan(...args)
}

t.test('ratio 0: an untrusted caller\'s -01 does not force sampling; nothing of its trace reaches the upstream', async (t) => {
  for (let i = 0; i < 5; i++) {
    const answer = await signedInject(app, { url: `/echo/${i}`, token: tokens.accessToken, macKey: tokens.macKey, headers: { traceparent, baggage: 'tenant=red' } })
    t.equal(answer.statusCode, 200)
    const received = upstream.requests.at(-1)!
    t.equal(received.headers.traceparent, undefined, 'no traceparent: not the caller\'s, and an unsampled request names no span')
    t.equal(received.headers.baggage, undefined, 'no baggage from an untrusted caller')
  }
  const lines = log.lines.filter((line) => line.msg === 'request' && String(line.path).startsWith('/echo/'))
  t.equal(lines.length, 5)
  t.ok(lines.every((line) => line.trace_id === undefined && line.span_id === undefined), 'no ids on lines of unsampled requests')
  t.equal(started, 0, 'no span made for an unsampled request: the sampler is asked before any')
})

t.test('a trusted caller\'s sampled flag is followed (parent based), exported as OTLP JSON', async (t) => {
  trusted = true
  const answer = await signedInject(app, { url: '/echo/trusted', token: tokens.accessToken, macKey: tokens.macKey, headers: { traceparent } })
  trusted = false
  t.equal(answer.statusCode, 200)
  t.ok(started > 0, 'a sampled request\'s spans go through the tracer (what the count of the unsampled ones sees)')
  const spans = await receiver.waitFor((all) => all.some((span) => span.kind === 2 && span.traceId === CALLER_TRACE) && all.some((span) => span.kind === 3))
  t.ok(receiver.contentTypes.every((type) => type.startsWith('application/json')), 'http/json')
  t.ok(spans.every((span) => span.traceId === CALLER_TRACE), 'nothing of the unsampled requests was exported')
  const server = spans.find((span) => span.kind === 2)!
  t.equal(server.parentSpanId, CALLER_SPAN)
  t.equal(server.resource['service.name'], 'macgate', 'macgate\'s default service name')
  const client = spans.find((span) => span.kind === 3)!
  t.equal(upstream.requests.at(-1)!.headers.traceparent, `00-${CALLER_TRACE}-${client.spanId}-01`)
})

t.test('"tracing": {"acceptIncomingContext": true} trusts every caller\'s context', async (t) => {
  const open = await buildGateway({ store, config: { upstream: upstream.url, routes: echoRoutes, tracing: { acceptIncomingContext: true } }, tracing })
  t.teardown(async () => await open.close())
  const trace = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab'
  const answer = await signedInject(open, { url: '/echo/open', token: tokens.accessToken, macKey: tokens.macKey, headers: { traceparent: `00-${trace}-${CALLER_SPAN}-01` } })
  t.equal(answer.statusCode, 200)
  const spans = await receiver.waitFor((all) => all.some((span) => span.kind === 2 && span.traceId === trace))
  t.equal(spans.find((span) => span.kind === 2 && span.traceId === trace)!.parentSpanId, CALLER_SPAN, 'the caller\'s span parents the server span')
})
