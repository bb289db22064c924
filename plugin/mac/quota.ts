import { errors, type OAuthError } from '../http/errors.ts'
import type { ClientReader, CountedUse, NonceLog, NonceUse } from '../store/store.ts'
import { ClientLimits } from './client-limits.ts'

/** A route's quota: its default limit of verified requests per client and minute. */
export interface RouteQuota {
  /** The route's name in the counters (its configured path). */
  route: string
  perMinute: number
}

const WINDOW_MS = 60_000

/** A (client, route) counter's name: the same on every instance, and what `clients show` reads. */
export function quotaCounterName (clientId: string, route: string): string {
  return `${clientId}:${route}`
}

/** The fixed window (Unix minutes) that `now` (Unix ms) falls in. */
export function quotaWindow (now: number): number {
  return Math.floor(now / WINDOW_MS)
}

/**
 * One limited request's quota: the route's, then what the check found (the limit that applied, the
 * window's count), read by the hook for the RateLimit fields of the answer.
 */
export class QuotaReading {
  readonly quota: RouteQuota
  /** The client's limit (its own or the route's); the route's until the client is known. */
  limit: number
  /** Requests counted in the window, this one included when admitted. */
  used = 0
  /** Seconds until the window ends. */
  resetSeconds = 60
  /** The window's number (Unix minutes), once counted. */
  window = -1
  /** Known once the MAC is proven. */
  clientId: string | undefined

  constructor (quota: RouteQuota) {
    this.quota = quota
    this.limit = quota.perMinute
  }

  /** What is left of the limit in the window: the `r` of the RateLimit field. */
  get remaining (): number {
    return Math.max(0, this.limit - this.used)
  }
}

/** Told of each refusal over a quota, `first` when it is this instance's first for the (client, route) in the window. */
export type QuotaRefusalListener = (reading: QuotaReading, window: number, first: boolean) => void

/** The answer for a client whose limit is 0, without a counter. */
const BLOCKED: CountedUse = Object.freeze({ outcome: 'over', used: 0 })

/** (window, client, route) refusals remembered per window for the first-refusal event, at most. */
const MAX_REFUSED = 10_000

/**
 * Quotas in fixed windows of a minute, per (client, route), counted by the store with the nonce
 * (`NonceLog.useCountedNonce`): only requests whose MAC is proven reach here, and a refused one's
 * nonce is not spent. The verifier gives its one clock reading, and is told the store's answer
 * (`settle`) in its own continuation: a counted request makes no promise of its own here.
 */
export class Quotas {
  readonly clients: ClientLimits
  readonly #store: NonceLog
  #listener: QuotaRefusalListener | undefined
  #refusedWindow = -1
  readonly #refused = new Set<string>()

  constructor (store: NonceLog & ClientReader) {
    this.#store = store
    this.clients = new ClientLimits(store)
  }

  onRefusal (listener: QuotaRefusalListener): void {
    this.#listener = listener
  }

  /**
   * Counts a verified request's nonce against its client's quota on the route, in the window of
   * `now` (the verifier's reading): the store's answer, to be given to `settle`.
   */
  count (use: NonceUse, clientId: string, reading: QuotaReading, now: number): CountedUse | PromiseLike<CountedUse> {
    const window = quotaWindow(now)
    reading.clientId = clientId
    reading.window = window
    reading.resetSeconds = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000))
    const own = this.clients.limitOf(clientId, now)
    if (own instanceof Promise) return own.then((limit) => this.#count(use, reading, limit))
    return this.#count(use, reading, own)
  }

  /** Records the store's answer on the reading (for the RateLimit fields); a refusal is told to the listener. */
  settle (answer: CountedUse, reading: QuotaReading): void {
    reading.used = answer.used
    if (answer.outcome === 'over') this.#refusal(reading)
  }

  #count (use: NonceUse, reading: QuotaReading, own: number | undefined): CountedUse | PromiseLike<CountedUse> {
    reading.limit = own ?? reading.quota.perMinute
    // 0 blocks: no counter to read.
    if (reading.limit === 0) return BLOCKED
    const count = { name: quotaCounterName(reading.clientId!, reading.quota.route), window: reading.window, limit: reading.limit, ttlSeconds: reading.resetSeconds + 60 }
    return this.#store.useCountedNonce(use, count)
  }

  #refusal (reading: QuotaReading): void {
    if (reading.window !== this.#refusedWindow) {
      this.#refused.clear()
      this.#refusedWindow = reading.window
    }
    const key = quotaCounterName(reading.clientId!, reading.quota.route)
    const first = !this.#refused.has(key) && this.#refused.size < MAX_REFUSED
    if (first) this.#refused.add(key)
    this.#listener?.(reading, reading.window, first)
  }
}

/** The 429 of a request over its quota: Retry-After is the window's end. */
export function quotaExceeded (reading: QuotaReading): OAuthError {
  const description = reading.limit === 0
    ? 'this client may not call this API (its quota is 0)'
    : `quota of ${reading.limit} requests a minute used up; retry in ${reading.resetSeconds} s`
  return errors.quotaExceeded(description, { retryAfter: reading.resetSeconds })
}
