import type { MetricValueWithName, Registry } from 'prom-client'

/**
 * A Prometheus histogram whose observations are plain numbers in typed arrays, turned into
 * prom-client's exposition only when scraped. prom-client's own `child.observe` validates its
 * labels and hashes them on every call (about 340 heap bytes an observation); on the hot path,
 * one observation per request, this makes none: a bucket found by a linear scan, three increments.
 *
 * It is a metric prom-client's registry takes as its own (`registerMetric`: name, help, type,
 * aggregator, `get`): the text exposition, the OpenMetrics one and the workers' aggregation
 * (`AggregatorRegistry`, summed) read it exactly as they read a prom-client `Histogram`.
 */
export class PlainHistogram<Label extends string> {
  readonly name: string
  readonly help: string
  readonly type = 'histogram' as const
  readonly aggregator = 'sum' as const
  readonly #labelNames: readonly Label[]
  readonly #bounds: readonly number[]
  /** Every label set observed so far, in the order first seen. */
  readonly #children: Array<PlainHistogramChild<Label>> = []

  constructor ({ name, help, labelNames, buckets, registers }: { name: string, help: string, labelNames: readonly Label[], buckets: readonly number[], registers: Registry[] }) {
    this.name = name
    this.help = help
    this.#labelNames = labelNames
    this.#bounds = [...buckets].sort((a, b) => a - b)
    for (const registry of registers) registry.registerMetric(this as never)
  }

  /** A new label set's child (keep it: each call makes one); values in `labelNames`' order. */
  labels (...values: string[]): PlainHistogramChild<Label> {
    if (values.length !== this.#labelNames.length) throw new Error(`${this.name} takes ${this.#labelNames.length} label values`)
    const labels = Object.fromEntries(this.#labelNames.map((name, i) => [name, values[i]!])) as Record<Label, string>
    const child = new PlainHistogramChild(labels, this.#bounds)
    this.#children.push(child)
    return child
  }

  /** What prom-client's Histogram#get gives: cumulative buckets (`le`, then `+Inf`), `_sum` and `_count` per label set. */
  async get (): Promise<{ name: string, help: string, type: 'histogram', values: Array<MetricValueWithName<string>>, aggregator: 'sum' }> {
    const values: Array<MetricValueWithName<string>> = []
    const bucket = `${this.name}_bucket`
    for (const child of this.#children) {
      let cumulative = 0
      for (const [i, bound] of this.#bounds.entries()) {
        cumulative += child.counts[i]!
        values.push({ labels: { le: bound, ...child.labels }, value: cumulative, metricName: bucket })
      }
      values.push({ labels: { le: '+Inf', ...child.labels }, value: child.count, metricName: bucket })
      values.push({ labels: { ...child.labels }, value: child.sum, metricName: `${this.name}_sum` })
      values.push({ labels: { ...child.labels }, value: child.count, metricName: `${this.name}_count` })
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  /** Zeroes every label set (prom-client's `reset`); the children its callers hold keep counting. */
  reset (): void {
    for (const child of this.#children) child.zero()
  }
}

/** One label set's counts: per bucket (not cumulative; the last slot is past every bound), their sum and number. */
export class PlainHistogramChild<Label extends string> {
  readonly labels: Readonly<Record<Label, string>>
  readonly counts: Float64Array
  sum = 0
  count = 0
  readonly #bounds: readonly number[]

  constructor (labels: Record<Label, string>, bounds: readonly number[]) {
    this.labels = labels
    this.#bounds = bounds
    this.counts = new Float64Array(bounds.length + 1)
  }

  observe (value: number): void {
    const bounds = this.#bounds
    let i = 0
    while (i < bounds.length && value > bounds[i]!) i++
    this.counts[i] = this.counts[i]! + 1
    this.sum += value
    this.count++
  }

  zero (): void {
    this.counts.fill(0)
    this.sum = 0
    this.count = 0
  }
}
