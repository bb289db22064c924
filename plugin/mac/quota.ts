import { errors, type OAuthError } from '../core/errors.js'
import type { ClientReader, CountedUse, NonceLog, NonceUse } from '../store/store.js'
import { ClientLimits } from './client-limits.js'

/** A route's quota: its default limit of verified requests per client and minute. */
export interface RouteQuota {
  /** The route's name in the counters (its configured path). */
  route: string
  perMinute: number
}

const WINDOW_MS = 60_000

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

/** (window, client, route) refusals remembered per window for the first-refusal event, at most. */
const MAX_REFUSED = 10_000

/**
 * Quotas in fixed windows of a minute, per (client, route), counted by the store with the nonce
 * (`NonceLog.useCountedNonce`): only requests whose MAC is proven reach here, and a refused one's
 * nonce is not spent. The clock is injected (tests step it).
 */
export class Quotas {
  readonly clients: ClientLimits
  readonly #store: NonceLog
  readonly #now: () => number
  #listener: QuotaRefusalListener | undefined
  #refusedWindow = -1
  readonly #refused = new Set<string>()

  constructor (store: NonceLog & ClientReader, now: () => number) {
    this.#store = store
    this.#now = now
    this.clients = new ClientLimits(store)
  }

  onRefusal (listener: QuotaRefusalListener): void {
    this.#listener = listener
  }

  /** Counts a verified request's nonce against its client's quota on the route. */
  count (use: NonceUse, clientId: string, reading: QuotaReading): CountedUse | Promise<CountedUse> {
    const now = this.#now()
    const window = Math.floor(now / WINDOW_MS)
    reading.clientId = clientId
    reading.resetSeconds = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000))
    const own = this.clients.limitOf(clientId)
    if (own instanceof Promise) return own.then((limit) => this.#count(use, reading, window, limit))
    return this.#count(use, reading, window, own)
  }

  #count (use: NonceUse, reading: QuotaReading, window: number, own: number | undefined): CountedUse | Promise<CountedUse> {
    reading.limit = own ?? reading.quota.perMinute
    // 0 blocks: no counter to read.
    if (reading.limit === 0) return this.#answered({ outcome: 'over', used: 0 }, reading, window)
    const count = { name: `${reading.clientId!}:${reading.quota.route}`, window, limit: reading.limit, ttlSeconds: reading.resetSeconds + 60 }
    const counted = this.#store.useCountedNonce(use, count)
    if (counted instanceof Promise) return counted.then((answer) => this.#answered(answer, reading, window))
    return this.#answered(counted, reading, window)
  }

  #answered (answer: CountedUse, reading: QuotaReading, window: number): CountedUse {
    reading.used = answer.used
    if (answer.outcome === 'over') this.#refusal(reading, window)
    return answer
  }

  #refusal (reading: QuotaReading, window: number): void {
    if (window !== this.#refusedWindow) {
      this.#refused.clear()
      this.#refusedWindow = window
    }
    const key = `${reading.clientId!}:${reading.quota.route}`
    const first = !this.#refused.has(key) && this.#refused.size < MAX_REFUSED
    if (first) this.#refused.add(key)
    this.#listener?.(reading, window, first)
  }
}

/** The 429 of a request over its quota: Retry-After is the window's end. */
export function quotaExceeded (reading: QuotaReading): OAuthError {
  const description = reading.limit === 0
    ? 'this client may not call this API (its quota is 0)'
    : `quota of ${reading.limit} requests a minute used up; retry in ${reading.resetSeconds} s`
  return errors.quotaExceeded(description, { retryAfter: reading.resetSeconds })
}
