// One autocannon run, measured: latencies from every response's own timing, counts by status and
// by the open API's error code, and a sample each second for the live line and the chart. The
// benchmark (bench/run.ts) and `macgate load` both measure with it.
import type { Request as AutocannonRequest } from 'autocannon'
import { LatencyHistogram } from './histogram.ts'

export type SetupRequest = (request: AutocannonRequest, context?: object) => AutocannonRequest

export interface LoadOptions {
  /** The first request's URL; setupRequest may change path, method and headers per request. */
  url: string
  seconds: number
  connections: number
  /** A fixed offered rate (requests per second over all connections) instead of the maximum. */
  rate?: number
  /** Stop after this many requests instead of after `seconds`. */
  amount?: number
  /** Called for every request: a fresh signature and nonce each time. */
  setupRequest?: SetupRequest
  /**
   * Read the error code of answers (`code` of an open API error, `error` of a token endpoint error):
   * of non-2xx answers, or of every answer (a token endpoint answering errors with 200). Off by
   * default: the benchmark's load generator does no more work than it must.
   */
  readErrorCodes?: 'non-2xx' | 'all'
  /** Called once a second while the run lasts. */
  onSecond?: (progress: LoadProgress) => void
  /** Ends the run early; what ran so far is still reported. */
  signal?: AbortSignal
}

/** One second of the run, for the chart. */
export interface Sample {
  /** Seconds since the start, at the end of the sample. */
  second: number
  requests: number
  rps: number
  /** ms; 0 for a second without answers. */
  p99: number
}

/** What a run has counted: so far (its progress), or in all (its result). */
interface LoadCounts {
  requests: number
  /** Latencies of every answer (any status), ms. */
  p50: number
  p99: number
  /** Connection errors, timeouts among them. */
  errors: number
  non2xx: number
  /** Answers by HTTP status. */
  statuses: Record<string, number>
  /** Answers by error code, when readErrorCodes is set. */
  errorCodes: Record<string, number>
  /** Elapsed, s. */
  seconds: number
}

export interface LoadProgress extends LoadCounts {
  /** Over the last second. */
  rps: number
}

export interface LoadResult extends LoadCounts {
  rps: number
  p90: number
  max: number
  mean: number
  timeouts: number
  timeline: Sample[]
}

// The open API's `"code":96012` or the token endpoint's `"error":96008`; success bodies carry
// `"code":0`, which is not an error.
const ERROR_CODE = /"(?:code|error)"\s*:\s*"?([1-9][0-9]*)/

function increment (counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1
}

/**
 * Runs autocannon with one request template whose setupRequest makes every request. Latencies come
 * from each response's own timing; the per-second samples from this process's clock, not
 * autocannon's whole-second ticks, so that a short run of a fixed number of requests is measured too.
 * autocannon itself is loaded by the first run, not at import: `macgate/gateway` is a service, and
 * only `macgate load` and the benchmark generate load.
 */
export async function runLoad ({ url, seconds, connections, rate, amount, setupRequest, readErrorCodes, onSecond, signal }: LoadOptions): Promise<LoadResult> {
  const all = new LatencyHistogram()
  const second = new LatencyHistogram()
  const statuses = new Map<number, number>()
  const errorCodes: Record<string, number> = {}
  const timeline: Sample[] = []
  let errors = 0
  let non2xx = 0
  let sampledAt = 0

  const onResponse = readErrorCodes === undefined
    ? undefined
    : (status: number, body: string): void => {
        if (readErrorCodes === 'non-2xx' && status >= 200 && status < 300) return
        const code = ERROR_CODE.exec(body)?.[1]
        if (code !== undefined) increment(errorCodes, code)
      }
  const template = { ...(setupRequest !== undefined && { setupRequest }), ...(onResponse !== undefined && { onResponse }) }
  const { default: autocannon } = await import('autocannon')
  const started = performance.now()
  const instance = autocannon({
    url,
    duration: seconds,
    // autocannon refuses more connections than requests, and splits a rate over the connections
    // in whole requests per second: a connection given 0 would run unlimited.
    connections: Math.max(1, Math.min(connections, amount ?? Infinity, rate ?? Infinity)),
    pipelining: 1,
    // autocannon looks at the end of a run only on its sample tick: every 100 ms, a run of N requests
    // or of 300 ms ends within 0.1 s of it, not at the next whole second (its own per-sample
    // statistics, which are finer then, are not used: the figures above are ours).
    sampleInt: 100,
    ...(rate !== undefined && { overallRate: rate }),
    ...(amount !== undefined && { amount }),
    ...(Object.keys(template).length > 0 && { requests: [template as AutocannonRequest] })
  })
  // Without a callback autocannon returns its event emitter, made thenable.
  const events = instance as unknown as NodeJS.EventEmitter & { stop: () => void }
  events.on('response', (_client: unknown, status: number, _bytes: number, responseTime: number) => {
    all.record(responseTime)
    second.record(responseTime)
    statuses.set(status, (statuses.get(status) ?? 0) + 1)
    if (status < 200 || status >= 300) non2xx++
  })
  events.on('reqError', () => { errors++ })

  let counted = 0
  const sample = (): LoadProgress => {
    const now = (performance.now() - started) / 1000
    const requests = all.count - counted
    const rps = requests / Math.max(0.001, now - sampledAt)
    timeline.push({ second: now, requests, rps, p99: second.percentile(0.99) })
    counted = all.count
    sampledAt = now
    second.reset()
    return { seconds: now, requests: all.count, rps, p50: all.percentile(0.5), p99: all.percentile(0.99), errors, non2xx, statuses: Object.fromEntries(statuses), errorCodes: { ...errorCodes } }
  }
  const ticker = setInterval(() => {
    const progress = sample()
    onSecond?.(progress)
  }, 1000)
  const stop = (): void => events.stop()
  signal?.addEventListener('abort', stop, { once: true })
  try {
    const result = await instance
    const elapsed = (performance.now() - started) / 1000
    if (all.count > counted) sample()
    return {
      requests: all.count,
      rps: all.count / elapsed,
      p50: all.percentile(0.5),
      p90: all.percentile(0.9),
      p99: all.percentile(0.99),
      max: all.max,
      mean: all.mean(),
      // autocannon counts a timeout among its errors too.
      errors: result.errors,
      timeouts: result.timeouts,
      non2xx,
      statuses: Object.fromEntries(statuses),
      errorCodes,
      seconds: elapsed,
      timeline
    }
  } finally {
    clearInterval(ticker)
    signal?.removeEventListener('abort', stop)
  }
}
