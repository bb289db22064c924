// Sampling at a ratio of one half (traceidratio, no parent): the decision is taken before any span
// with a trace id from the SDK's generator, and the span then made carries that very trace id: each
// exported trace is one the sampler samples, and the unsampled half costs no span.
import { ROOT_CONTEXT, SamplingDecision, SpanKind } from '@opentelemetry/api'
import { TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace'
import t from 'tap'
import { signedInject } from '../../helpers/gateway.ts'
import { tracedGateway } from '../../helpers/traced-gateway.ts'
import { startOtlpReceiver } from '../../helpers/otlp-receiver.ts'

const receiver = await startOtlpReceiver(t)
const { tracing, app, log, tokens } = await tracedGateway(t, {
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
  OTEL_TRACES_SAMPLER: 'traceidratio',
  OTEL_TRACES_SAMPLER_ARG: '0.5',
  OTEL_BSP_SCHEDULE_DELAY: '50'
})

t.test('traceidratio 0.5: what is recorded is what the sampler samples, by the trace id the span carries', async (t) => {
  const startSpan = tracing.tracer.startSpan.bind(tracing.tracer)
  let servers = 0
  tracing.tracer.startSpan = (name, options, parent) => {
    if (options?.kind === SpanKind.SERVER) servers++
    return startSpan(name, options, parent)
  }
  t.teardown(() => { tracing.tracer.startSpan = startSpan })
  const count = 40
  for (let i = 0; i < count; i++) {
    const answer = await signedInject(app, { url: `/echo/ratio-${i}`, token: tokens.accessToken, macKey: tokens.macKey })
    t.equal(answer.statusCode, 200)
  }
  const lines = log.lines.filter((line) => line.msg === 'request' && String(line.path).startsWith('/echo/ratio-'))
  const sampled = lines.filter((line) => line.trace_id !== undefined)
  t.ok(sampled.length > 0 && sampled.length < count, `some sampled, some not (${sampled.length} of ${count})`)
  t.equal(servers, sampled.length, 'a server span made for the sampled requests only')
  const spans = await receiver.waitFor((all) => all.filter((span) => span.kind === 2 && String(span.attributes['url.path']).startsWith('/echo/ratio-')).length === sampled.length)
  const exported = spans.filter((span) => span.kind === 2 && String(span.attributes['url.path']).startsWith('/echo/ratio-'))
  t.same(exported.map((span) => span.traceId).sort(), sampled.map((line) => String(line.trace_id)).sort(), 'the access lines name the exported spans')
  const sampler: Sampler = new TraceIdRatioBasedSampler(0.5)
  for (const span of exported) {
    t.equal(sampler.shouldSample(ROOT_CONTEXT, span.traceId, 'GET', SpanKind.SERVER, {}, []).decision, SamplingDecision.RECORD_AND_SAMPLED, 'the trace id the decision was taken on')
  }
  t.ok(exported.every((span) => span.parentSpanId === ''), 'roots: no parent was sent')
})

t.test('OTEL_TRACES_SAMPLER and _ARG make the sampler the SDK would make', async (t) => {
  const { samplerFromEnv } = await import('../../../gateway/operator/tracing/sampling.ts')
  const saved = { name: process.env.OTEL_TRACES_SAMPLER, arg: process.env.OTEL_TRACES_SAMPLER_ARG }
  t.teardown(() => {
    process.env.OTEL_TRACES_SAMPLER = saved.name
    process.env.OTEL_TRACES_SAMPLER_ARG = saved.arg
  })
  const made = (name: string | undefined, arg?: string): string => {
    if (name === undefined) delete process.env.OTEL_TRACES_SAMPLER
    else process.env.OTEL_TRACES_SAMPLER = name
    if (arg === undefined) delete process.env.OTEL_TRACES_SAMPLER_ARG
    else process.env.OTEL_TRACES_SAMPLER_ARG = arg
    return samplerFromEnv().toString()
  }
  t.equal(made('always_on'), 'AlwaysOnSampler')
  t.equal(made('always_off'), 'AlwaysOffSampler')
  t.match(made('parentbased_always_off'), /^ParentBased\{root=AlwaysOffSampler,/)
  t.match(made('parentbased_always_on'), /^ParentBased\{root=AlwaysOnSampler,/)
  t.match(made(undefined), /^ParentBased\{root=AlwaysOnSampler,/, 'the default')
  t.match(made('no_such_sampler'), /^ParentBased\{root=AlwaysOnSampler,/, 'an unknown name: the default, as the SDK does')
  t.equal(made('traceidratio', '0.25'), 'TraceIdRatioBased{0.25}')
  t.match(made('parentbased_traceidratio', '0.01'), /^ParentBased\{root=TraceIdRatioBased\{0.01\},/)
  t.equal(made('traceidratio', '7'), 'TraceIdRatioBased{1}', 'out of range: 1, as the SDK does')
  t.equal(made('traceidratio'), 'TraceIdRatioBased{1}', 'no ratio: 1')
})
