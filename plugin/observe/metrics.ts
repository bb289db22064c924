import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { PlainHistogram } from './plain-histogram.ts'

const OUTCOMES = [
  'ok', 'malformed_header', 'unknown_token', 'mac_mismatch', 'stale_nonce', 'replayed_nonce',
  'query_binding', 'scope_denied', 'quota_exceeded', 'bad_request', 'store_unavailable', 'internal'
] as const

/** Why a signed open API request was admitted or refused: the label of `macgate_verifications_total`. */
export type VerificationOutcome = typeof OUTCOMES[number]

/** What the token cache tells at each scrape (a structural type: the cache lives a layer up). */
export interface CacheStats {
  readonly stats: { readonly hits: number, readonly misses: number }
  readonly size: number
}

/** The replay memory's size as a store tells it (a structural type: the stores live a layer up). */
export type NonceStatsReader = () => Promise<{ held: number, bytes: number }>

/** Seconds: from a tenth of a millisecond (a cache hit) to the store's 2 s command timeout and past. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

/**
 * macgate's Prometheus metrics, every name prefixed `macgate_`, on a registry of their own (the
 * embedding app may pass its own). The check itself pays for plain integer increments only
 * (`verifications`, the token cache's own stats): prom-client reads them at scrape time through
 * `collect`. Each request adds one `requestDuration` observation (the gateway's onResponse hook),
 * into plain numbers too (`PlainHistogram`);
 * the rest (token endpoint, authorizations, store commands) is off the hot path or once per
 * event-loop turn.
 */
export class Metrics {
  readonly registry: Registry
  /** Counted by the MAC hook, one slot per outcome; read at each scrape. */
  readonly verifications: Record<VerificationOutcome, number> = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, 0])) as Record<VerificationOutcome, number>
  readonly tokenRequests: Counter<'grant_type' | 'result'>
  readonly authorizations: Counter<'outcome'>
  readonly revocationsReceived: Counter
  readonly cacheFlushes: Counter
  readonly storeCommands: Histogram<'command' | 'result'>
  /** Observed once per request: plain numbers, exposed at scrape time (plain-histogram.ts). */
  readonly requestDuration: PlainHistogram<'route' | 'method' | 'status_class'>
  #caches: CacheStats[] = []
  #nonceStats: NonceStatsReader | undefined
  /** One labelled child per (command, result): observing makes no label object per batch. */
  readonly #commandTimers = new Map<string, { observe: (seconds: number) => void }>()

  constructor (registry: Registry = new Registry()) {
    this.registry = registry
    const registers = [registry]
    const { verifications } = this
    new Counter({ // eslint-disable-line no-new
      name: 'macgate_verifications_total',
      help: 'Signed open API requests by outcome: ok, or the reason they were refused',
      labelNames: ['outcome'],
      registers,
      collect () {
        this.reset()
        for (const outcome of OUTCOMES) this.labels(outcome).inc(verifications[outcome])
      }
    })
    const caches = (): CacheStats[] => this.#caches
    const sum = (read: (cache: CacheStats) => number): number => caches().reduce((total, cache) => total + read(cache), 0)
    new Counter({ // eslint-disable-line no-new
      name: 'macgate_token_cache_lookups_total',
      help: 'Access token lookups in the in-process cache, by result (hit, or miss: a store read or a refusal)',
      labelNames: ['result'],
      registers,
      collect () {
        this.reset()
        this.labels('hit').inc(sum((cache) => cache.stats.hits))
        this.labels('miss').inc(sum((cache) => cache.stats.misses))
      }
    })
    new Gauge({ // eslint-disable-line no-new
      name: 'macgate_token_cache_entries',
      help: 'Entries in the token cache (live tokens and remembered unknown ones)',
      registers,
      collect () { this.set(sum((cache) => cache.size)) }
    })
    // Read at each scrape; a store that cannot answer leaves them as they were. prom-client collects
    // the metrics side by side, so the two gauges share one reading (on Redis, a script call per tag).
    let reading: Promise<{ held: number, bytes: number } | undefined> | undefined
    const nonces = async (): Promise<{ held: number, bytes: number } | undefined> => {
      reading ??= (this.#nonceStats?.() ?? Promise.resolve(undefined)).catch(() => undefined).finally(() => { reading = undefined })
      return await reading
    }
    new Gauge({ // eslint-disable-line no-new
      name: 'macgate_nonces_held',
      help: 'Nonces held for replay detection (the embedded store\'s own; on Redis, the buckets this instance wrote to, which every instance shares)',
      registers,
      async collect () {
        const stats = await nonces()
        if (stats !== undefined) this.set(stats.held)
      }
    })
    new Gauge({ // eslint-disable-line no-new
      name: 'macgate_nonce_memory_bytes',
      help: 'Memory the held nonces take, estimated: the embedded store\'s tables, or Redis\'s MEMORY USAGE of the buckets',
      registers,
      async collect () {
        const stats = await nonces()
        if (stats !== undefined) this.set(stats.bytes)
      }
    })
    this.tokenRequests = new Counter({
      name: 'macgate_token_requests_total',
      help: 'Token endpoint requests by grant type and result (issued, or the error kind)',
      labelNames: ['grant_type', 'result'],
      registers
    })
    this.authorizations = new Counter({
      name: 'macgate_authorizations_total',
      help: 'Authorization requests by outcome: issued (after consent or with remembered consent), denied, refused (an error), sign_in (sent to sign in), consent_shown',
      labelNames: ['outcome'],
      registers
    })
    this.revocationsReceived = new Counter({
      name: 'macgate_revocations_received_total',
      help: 'Revoked token hashes heard on the revocation channel (from any instance)',
      registers
    })
    this.cacheFlushes = new Counter({
      name: 'macgate_token_cache_flushes_total',
      help: 'Whole-cache drops after the revocation channel reconnected (messages may have been missed)',
      registers
    })
    this.storeCommands = new Histogram({
      name: 'macgate_store_command_duration_seconds',
      help: 'Redis command and script latency, by command and result (ok or error)',
      labelNames: ['command', 'result'],
      buckets: LATENCY_BUCKETS,
      registers
    })
    this.requestDuration = new PlainHistogram({
      name: 'macgate_request_duration_seconds',
      help: 'Requests served, by route (the configured open API route, an endpoint, or unmatched), method and status class',
      labelNames: ['route', 'method', 'status_class'],
      buckets: LATENCY_BUCKETS,
      registers
    })
  }

  /** Reads the store's replay memory at each scrape. */
  watchNonces (stats: NonceStatsReader): void {
    this.#nonceStats = stats
  }

  /** One store command's latency, by its name and whether it failed. */
  observeStoreCommand (command: string, seconds: number, failed: boolean): void {
    const result = failed ? 'error' : 'ok'
    const name = `${command} ${result}`
    let timer = this.#commandTimers.get(name)
    if (timer === undefined) {
      timer = this.storeCommands.labels(command, result)
      this.#commandTimers.set(name, timer)
    }
    timer.observe(seconds)
  }

  /** Reports a token cache's hits, misses and size at each scrape. */
  watchTokenCache (cache: CacheStats): void {
    this.#caches.push(cache)
  }
}
