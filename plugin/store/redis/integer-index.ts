/** Room it starts with: a turn of up to 32 distinct keys never grows it. */
const INITIAL_ROOM = 64

/** Stamps are 16 bits: after this many uses the stamps are zeroed (a few hundred bytes, every few seconds at most). */
const LAST_STAMP = 0xffff

/**
 * A map from small non-negative integers (below 2³¹) to positive ones, emptied for the next use in
 * one step and making nothing as it is filled or emptied: the nonce batch's index of the sets it
 * has named this turn (nonces.ts), which a `Map` served at the cost of a new table on every
 * `clear`, each event-loop turn. Open addressing over typed arrays; an entry is live when its stamp
 * is the current one, so emptying is a new stamp. It grows (by doubling, keeping what it holds)
 * when half full, so its room is bounded by the largest use it has had.
 */
export class IntegerIndex {
  #keys = new Int32Array(INITIAL_ROOM)
  #values = new Int32Array(INITIAL_ROOM)
  #stamps = new Uint16Array(INITIAL_ROOM)
  #stamp = 1
  #size = 0

  get size (): number {
    return this.#size
  }

  /** The value of `key`, or 0 when it has none. */
  get (key: number): number {
    const mask = this.#keys.length - 1
    for (let at = slotOf(key, mask); ; at = (at + 1) & mask) {
      if (this.#stamps[at] !== this.#stamp) return 0
      if (this.#keys[at] === key) return this.#values[at]!
    }
  }

  /** Sets `key`'s value (positive: 0 reads as none). */
  set (key: number, value: number): void {
    if (2 * (this.#size + 1) > this.#keys.length) this.#grow()
    const mask = this.#keys.length - 1
    let at = slotOf(key, mask)
    while (this.#stamps[at] === this.#stamp) {
      if (this.#keys[at] === key) {
        this.#values[at] = value
        return
      }
      at = (at + 1) & mask
    }
    this.#stamps[at] = this.#stamp
    this.#keys[at] = key
    this.#values[at] = value
    this.#size++
  }

  /** Empty, its room kept. */
  clear (): void {
    this.#size = 0
    if (this.#stamp === LAST_STAMP) {
      // No old stamp may read as a new one.
      this.#stamps.fill(0)
      this.#stamp = 0
    }
    this.#stamp++
  }

  #grow (): void {
    const keys = this.#keys
    const values = this.#values
    const stamps = this.#stamps
    const stamp = this.#stamp
    this.#keys = new Int32Array(2 * keys.length)
    this.#values = new Int32Array(2 * keys.length)
    this.#stamps = new Uint16Array(2 * keys.length)
    this.#stamp = 1
    this.#size = 0
    for (let at = 0; at < keys.length; at++) {
      if (stamps[at] === stamp) this.set(keys[at]!, values[at]!)
    }
  }
}

/** Where `key` is first looked for: a multiplicative hash (Fibonacci's constant), its high bits folded in, since set ids run in steps. */
function slotOf (key: number, mask: number): number {
  const hash = Math.imul(key, 0x9e3779b1)
  return (hash ^ (hash >>> 15)) & mask
}
