import { ExpiringMap } from './expiring-map.ts'
import type { HitCount } from '../records.ts'
import type { HitCounters } from '../roles.ts'

/** Rate-limit counters kept at most; past it the oldest go first (a flood cannot grow them). */
const MAX_COUNTERS = 100_000

/** The embedded store's rate-limit counters: this process's hits only. */
export class MemoryHitCounters implements HitCounters {
  readonly #clock: () => number
  readonly #counters: ExpiringMap<{ count: number }>

  constructor (clock: () => number) {
    this.#clock = clock
    this.#counters = new ExpiringMap(clock, MAX_COUNTERS)
  }

  async countHit (key: string, windowMs: number): Promise<HitCount> {
    const now = this.#clock()
    const counter = this.#counters.get(key)
    if (counter !== undefined) {
      counter.count++
      return { count: counter.count, resetMs: this.#counters.expiresAt(key)! - now }
    }
    this.#counters.set(key, { count: 1 }, now + windowMs)
    return { count: 1, resetMs: windowMs }
  }

  async readHits (key: string): Promise<HitCount> {
    const count = this.#counters.get(key)?.count ?? 0
    return { count, resetMs: count === 0 ? 0 : this.#counters.expiresAt(key)! - this.#clock() }
  }

  sweep (): void {
    this.#counters.sweep()
  }
}
