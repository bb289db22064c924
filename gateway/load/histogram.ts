// Latencies of a load run, kept in logarithmic buckets: bounded memory however long the run, and
// sub-millisecond precision where the gateway's check lives (autocannon's own histogram keeps whole
// milliseconds, too coarse for a check that adds microseconds).

/** Each bucket is 0.1% wider than the one below: a percentile is off by at most that. */
const GROWTH = 1.001
const LOG_GROWTH = Math.log(GROWTH)
/** The first bucket's upper bound, ms (1 µs); anything faster lands in it. */
const FLOOR_MS = 0.001
/** The last bucket holds anything from two minutes up. */
const BUCKETS = Math.ceil(Math.log(120_000 / FLOOR_MS) / LOG_GROWTH) + 1

/** The bucket of a latency: computed once, recorded into several histograms (the run's, the second's). */
export function bucketOf (ms: number): number {
  if (!(ms > FLOOR_MS)) return 0
  return Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / FLOOR_MS) / LOG_GROWTH))
}

/** The upper bound of bucket `index`, ms: a percentile is reported high rather than low. */
function boundOf (index: number): number {
  return FLOOR_MS * GROWTH ** index
}

export class LatencyHistogram {
  readonly #counts = new Float64Array(BUCKETS)
  count = 0
  sum = 0
  max = 0

  record (ms: number, bucket: number = bucketOf(ms)): void {
    this.#counts[bucket]! += 1
    this.count += 1
    this.sum += ms
    if (ms > this.max) this.max = ms
  }

  /**
   * The latency under which `fraction` (0 to 1) of the recorded ones fall, ms; 0 when none was
   * recorded. The rank is at least the first latency and at most the last, so the walk up the
   * buckets always ends at a recorded one (at the latest the max's bucket): no fallback past them.
   */
  percentile (fraction: number): number {
    if (this.count === 0) return 0
    const rank = Math.min(this.count, Math.max(1, Math.ceil(fraction * this.count)))
    let index = 0
    for (let seen = this.#counts[0]!; seen < rank; seen += this.#counts[index]!) index++
    return Math.min(boundOf(index), this.max)
  }

  mean (): number {
    return this.count === 0 ? 0 : this.sum / this.count
  }

  reset (): void {
    this.#counts.fill(0)
    this.count = 0
    this.sum = 0
    this.max = 0
  }
}
