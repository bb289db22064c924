// Latencies of a load run, kept in an HDR histogram (hdr-histogram-js, autocannon's own): bounded
// memory however long the run, and 0.1% precision from a microsecond up, where the gateway's check
// lives. autocannon's histogram records whole milliseconds, too coarse for a check that adds
// microseconds, so the run keeps its own, in nanoseconds.
import { build, type Histogram } from 'hdr-histogram-js'

const NS_PER_MS = 1_000_000
/** The least latency recorded, ns (1 µs): anything faster is recorded as it. */
const FLOOR_NS = 1_000
/** The greatest latency recorded, ns (two minutes): anything slower is recorded as it. */
const CEILING_NS = 120_000 * NS_PER_MS

/** A latency in ms as the whole nanoseconds recorded, within the floor and the ceiling (NaN: the floor). */
function recordedNs (ms: number): number {
  const ns = Math.ceil(ms * NS_PER_MS)
  if (!(ns > FLOOR_NS)) return FLOOR_NS
  return Math.min(ns, CEILING_NS)
}

export class LatencyHistogram {
  // Three significant digits: a percentile is off by at most 0.1%, and reported high.
  readonly #hdr: Histogram = build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: CEILING_NS,
    numberOfSignificantValueDigits: 3,
    autoResize: false
  })

  // Kept exactly beside the histogram: the mean and the max are reported as they were, not bucketed.
  count = 0
  sum = 0
  max = 0

  record (ms: number): void {
    this.#hdr.recordValue(recordedNs(ms))
    this.count += 1
    this.sum += ms
    if (ms > this.max) this.max = ms
  }

  /**
   * The latency under which `fraction` (0 to 1) of the recorded ones fall, ms; 0 when none was
   * recorded. The rank is at least the first latency and at most the last; the value is the top of
   * its bucket, capped by the max. HDR reads percentile 0 as the bottom of the first bucket, so
   * fraction 0 asks for the least positive percentile instead: the first latency, reported high.
   */
  percentile (fraction: number): number {
    if (this.count === 0) return 0
    const ns = this.#hdr.getValueAtPercentile(Math.max(fraction * 100, Number.MIN_VALUE))
    return Math.min(ns / NS_PER_MS, this.max)
  }

  mean (): number {
    return this.count === 0 ? 0 : this.sum / this.count
  }

  reset (): void {
    this.#hdr.reset()
    this.count = 0
    this.sum = 0
    this.max = 0
  }
}
