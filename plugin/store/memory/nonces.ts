import { errors } from '../../http/errors.ts'
import { ExpiringMap } from './expiring-map.ts'
import { NonceBuckets } from './nonce-buckets.ts'
import type { NonceUse } from '../nonce-key.ts'
import type { CountedUse, NonceStats, QuotaCount } from '../records.ts'
import type { NonceLog, NonceReports } from '../roles.ts'

/** Quota counters held at most: (client, route) pairs with requests in the current window; beyond it the oldest goes. */
const MAX_QUOTA_COUNTERS = 100_000

/** The embedded store's replay memory (`nonce-buckets.ts`) and the quota counters kept with it. */
export class MemoryNonces implements NonceLog, NonceReports {
  readonly #clock: () => number
  readonly #nonces: NonceBuckets
  readonly #quotas: ExpiringMap<{ count: number }>

  constructor (clock: () => number, maxNonces: number) {
    this.#clock = clock
    this.#nonces = new NonceBuckets({ capacity: maxNonces, clock })
    this.#quotas = new ExpiringMap(clock, MAX_QUOTA_COUNTERS)
  }

  useNonce ({ key, minute, ttlSeconds }: NonceUse): boolean {
    if (!this.#nonces.hasRoom()) throw errors.storeUnavailable('nonce store is full; try again shortly')
    return this.#nonces.add(key, minute, ttlSeconds)
  }

  /** Counted in process: this instance's requests only (README, "Quotas"). */
  useCountedNonce (use: NonceUse, { name, window, limit, ttlSeconds }: QuotaCount): CountedUse {
    const key = `${window}:${name}`
    const counter = this.#quotas.get(key)
    const used = counter?.count ?? 0
    if (used >= limit) return { outcome: 'over', used }
    if (!this.useNonce(use)) return { outcome: 'replayed', used }
    if (counter === undefined) this.#quotas.set(key, { count: 1 }, this.#clock() + ttlSeconds * 1000)
    else counter.count++
    return { outcome: 'fresh', used: used + 1 }
  }

  async quotaUsed (names: string[], window: number): Promise<number[]> {
    return names.map((name) => this.#quotas.get(`${window}:${name}`)?.count ?? 0)
  }

  async nonceStats (): Promise<NonceStats> {
    return { held: this.#nonces.size, bytes: this.#nonces.bytes }
  }

  sweep (): void {
    this.#quotas.sweep()
  }
}
