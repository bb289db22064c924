import { diag, SamplingDecision, SpanKind, trace, type Context, type Link, type Span, type SpanOptions, type Tracer } from '@opentelemetry/api'
import { getNumberFromEnv, getStringFromEnv } from '@opentelemetry/core'
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, RandomIdGenerator, TraceIdRatioBasedSampler, type IdGenerator, type Sampler } from '@opentelemetry/sdk-trace'

const NO_ATTRIBUTES = Object.freeze({})
const NO_LINKS: Link[] = []

/** `OTEL_TRACES_SAMPLER_ARG` as the SDK reads it: a ratio in [0, 1], else 1. */
function ratioFromEnv (): number {
  const ratio = getNumberFromEnv('OTEL_TRACES_SAMPLER_ARG')
  if (ratio === undefined || ratio < 0 || ratio > 1) {
    diag.error(`OTEL_TRACES_SAMPLER_ARG=${ratio ?? ''} is blank or out of range ([0..1]), defaulting to 1.`)
    return 1
  }
  return ratio
}

/**
 * `OTEL_TRACES_SAMPLER` (and `_ARG`), built from the SDK's own samplers as the Node SDK builds it
 * (its builder is not public); the default, and the answer to a name it does not know, is the SDK's:
 * `parentbased_always_on`. The same instance goes to the SDK, so that both ask one sampler.
 */
export function samplerFromEnv (): Sampler {
  const name = getStringFromEnv('OTEL_TRACES_SAMPLER')
  switch (name) {
    case 'always_on': return new AlwaysOnSampler()
    case 'always_off': return new AlwaysOffSampler()
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'traceidratio': return new TraceIdRatioBasedSampler(ratioFromEnv())
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratioFromEnv()) })
    default:
      if (name !== undefined && name !== 'parentbased_always_on') diag.error(`unknown OTEL_TRACES_SAMPLER value "${name}", using default`)
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
  }
}

/**
 * The sampling decision taken before any span is made. The SDK's `startSpan` makes a span (ids,
 * sampling result, span context, a non-recording span object: about 600 bytes) even for a request it
 * will not record; here the configured sampler is asked first, with the trace id the span would get
 * (the parent's, or a new one from the SDK's random generator), and the SDK is asked for a span only
 * when that answer records it. This is also the SDK's id generator: the new trace id the decision
 * was taken on is handed to the span the SDK then makes, whose sampler (the same one, deterministic
 * on the same trace id, parent and links) answers as it did here.
 */
export class Sampling implements IdGenerator {
  readonly sampler: Sampler
  readonly #random = new RandomIdGenerator()
  /** The trace id of the span being started, taken by the SDK's next `generateTraceId`. */
  #decided: string | undefined

  constructor (sampler: Sampler) {
    this.sampler = sampler
  }

  generateTraceId (): string {
    const decided = this.#decided
    if (decided === undefined) return this.#random.generateTraceId()
    this.#decided = undefined
    return decided
  }

  generateSpanId (): string {
    return this.#random.generateSpanId()
  }

  /** A recording span when the sampler records it; undefined (no span made, nothing allocated but the decision) otherwise. */
  startSpan (tracer: Tracer, name: string, options: SpanOptions, parent: Context): Span | undefined {
    const parentSpan = trace.getSpanContext(parent)
    const newTrace = parentSpan === undefined || !trace.isSpanContextValid(parentSpan)
    const traceId = newTrace ? this.#random.generateTraceId() : parentSpan.traceId
    const { decision } = this.sampler.shouldSample(parent, traceId, name, options.kind ?? SpanKind.INTERNAL, NO_ATTRIBUTES, options.links ?? NO_LINKS)
    if (decision === SamplingDecision.NOT_RECORD) return undefined
    if (newTrace) this.#decided = traceId
    const span = tracer.startSpan(name, options, parent)
    this.#decided = undefined
    return span.isRecording() ? span : undefined
  }
}
