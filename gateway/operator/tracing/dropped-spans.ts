import { createNoopMeter, type Attributes, type Counter, type Meter, type MeterProvider } from '@opentelemetry/api'
import { Counter as PromCounter, type Registry } from 'prom-client'

/** The batch span processor's own count of finished spans (its self-observability), by `error.type` when lost. */
const PROCESSED = 'otel.sdk.processor.span.processed'
/** At most one warning line a minute, however many spans are lost. */
const WARN_EVERY_MS = 60_000
const NAME = 'macgate_trace_spans_dropped_total'

/**
 * Spans the exporter pipeline lost: the batch processor's queue was full (a slow or hung
 * collector), or an export failed. Counted from the processor's own self-observability counter,
 * handed to it as its meter provider; a warning at most once a minute.
 */
export class DroppedSpans {
  readonly counter = new PromCounter({
    name: NAME,
    help: 'Trace spans lost before reaching the collector: the export queue was full, or an export failed',
    labelNames: ['reason'],
    registers: []
  })

  #warn: ((fields: object, message: string) => void) | undefined
  #lastWarning = -Infinity
  #since = 0

  /** Where the once-a-minute warning goes (the gateway's logger), once there is one. */
  warnTo (warn: (fields: object, message: string) => void): void {
    this.#warn = warn
  }

  /** Puts the counter on a registry (the plugin's, which `/metrics` serves). */
  register (registry: Registry): void {
    if (registry.getSingleMetric(NAME) === undefined) registry.registerMetric(this.counter)
  }

  dropped (count: number, reason: string): void {
    this.counter.labels(reason).inc(count)
    this.#since += count
    const now = Date.now()
    if (this.#warn === undefined || now - this.#lastWarning < WARN_EVERY_MS) return
    this.#lastWarning = now
    this.#warn({ dropped: this.#since, reason }, 'trace spans dropped: the collector is slow, unreachable or refusing them (macgate_trace_spans_dropped_total)')
    this.#since = 0
  }

  /** The meter provider the batch processor reports to: its lost spans reach `dropped`, the rest is a no-op. */
  meterProvider (): MeterProvider {
    const noop = createNoopMeter()
    const processed: Counter = {
      add: (count: number, attributes?: Attributes) => {
        const reason = attributes?.['error.type']
        if (reason !== undefined) this.dropped(count, reason === 'queue_full' ? 'queue_full' : 'export_failed')
      }
    }
    const meter: Meter = Object.assign(Object.create(noop) as Meter, {
      createCounter: (name: string) => name === PROCESSED ? processed : noop.createCounter(name)
    })
    return { getMeter: () => meter }
  }
}
