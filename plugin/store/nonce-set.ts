/**
 * The embedded store's record of used nonces: one number per (token, nonce), kept only while the
 * nonce could still be fresh. At ten thousand requests a second that is millions of entries, so
 * no object per entry, and no full scan: each second, entries are dropped from the oldest end
 * until one is still live (insertion order follows expiry closely; the rest go a little later).
 * It holds at most `capacity` entries: when full of live ones, the caller must refuse the request
 * (a nonce it cannot record is a replay it cannot detect).
 */
export class NonceSet {
  readonly #expiries = new Map<string, number>()
  readonly #sweeper: NodeJS.Timeout
  readonly capacity: number

  constructor (sweepIntervalMs = 1000, capacity = Number.POSITIVE_INFINITY) {
    this.capacity = capacity
    this.#sweeper = setInterval(() => this.#sweep(), sweepIntervalMs).unref()
  }

  /** False when every place is taken by a live entry, even after dropping the expired ones. */
  hasRoom (): boolean {
    if (this.#expiries.size < this.capacity) return true
    this.#sweep()
    return this.#expiries.size < this.capacity
  }

  /** True the first time `key` is seen while unexpired. */
  add (key: string, ttlSeconds: number): boolean {
    const now = Date.now()
    const expires = this.#expiries.get(key)
    if (expires !== undefined && expires > now) return false
    // Delete first, so that a re-added key moves to the young end.
    if (expires !== undefined) this.#expiries.delete(key)
    this.#expiries.set(key, now + ttlSeconds * 1000)
    return true
  }

  get size (): number {
    return this.#expiries.size
  }

  #sweep (): void {
    const now = Date.now()
    for (const [key, expires] of this.#expiries) {
      if (expires > now) break
      this.#expiries.delete(key)
    }
  }

  close (): void {
    clearInterval(this.#sweeper)
  }
}
