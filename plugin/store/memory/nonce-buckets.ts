import { keyWord } from '../nonce-key.ts'
/**
 * The embedded store's record of used nonces. Millions are held at once (every nonce until its
 * minute leaves the window), so no object per nonce: each minute `M` has one bucket, a
 * set of open-addressing tables of 64-bit keyed hashes (`nonce-key.ts`) in Uint32Arrays, probed
 * linearly, each doubling past 3/4 full. A place is 8 bytes (the whole key), so a nonce costs
 * about 11 bytes in a table at 3/4, 21 in one at the 3/8 just after doubling, and about 14 on
 * average (the tables doubling at different times). A bucket
 * is dropped whole once its minute has left the window: no per-nonce expiry and no scan.
 * It holds at most `capacity` nonces: when that many are live, the store fails the request with
 * 503 (a nonce it cannot record is a replay it cannot detect).
 */
export class NonceBuckets {
  readonly capacity: number
  readonly #clock: () => number
  readonly #buckets = new Map<number, Bucket>()
  /** The bucket of the last nonce: consecutive requests mostly share a minute. */
  #last: Bucket | undefined
  /** The earliest `until` of any bucket: nothing is due before it. */
  #nextExpiry = Number.POSITIVE_INFINITY
  #held = 0

  constructor ({ capacity = Number.POSITIVE_INFINITY, clock = Date.now }: { capacity?: number, clock?: () => number } = {}) {
    this.capacity = capacity
    this.#clock = clock
  }

  /** False when every place is taken by a live nonce, even after dropping the expired buckets. */
  hasRoom (): boolean {
    if (this.#held < this.capacity) return true
    this.#dropExpired(this.#clock())
    return this.#held < this.capacity
  }

  /**
   * True the first time `key` (its first 8 bytes) is seen in the bucket of `minute`, which is kept
   * `ttlSeconds` from now.
   */
  add (key: string, minute: number, ttlSeconds: number): boolean {
    const now = this.#clock()
    if (now >= this.#nextExpiry) this.#dropExpired(now)
    const until = now + ttlSeconds * 1000
    let bucket = this.#last
    if (bucket === undefined || bucket.minute !== minute) bucket = this.#bucket(minute, until)
    // Verifiers sharing the store with different skews: a minute is kept as long as the longest asks.
    if (until > bucket.until) bucket.until = until
    // Both words zero marks an empty place; such a key (one in 2^64) becomes 0:1.
    const high = keyWord(key, 0)
    const low = keyWord(key, 4) || (high === 0 ? 1 : 0)
    if (!bucket.add(high, low)) return false
    this.#held++
    return true
  }

  /** Live nonces held (expired buckets dropped first). */
  get size (): number {
    this.#dropExpired(this.#clock())
    return this.#held
  }

  /** Bytes of the tables holding them. */
  get bytes (): number {
    let bytes = 0
    for (const bucket of this.#buckets.values()) bytes += bucket.bytes
    return bytes
  }

  #bucket (minute: number, until: number): Bucket {
    let bucket = this.#buckets.get(minute)
    if (bucket === undefined) {
      bucket = new Bucket(minute, until)
      this.#buckets.set(minute, bucket)
      this.#nextExpiry = Math.min(this.#nextExpiry, until)
    }
    this.#last = bucket
    return bucket
  }

  #dropExpired (now: number): void {
    this.#nextExpiry = Number.POSITIVE_INFINITY
    for (const [minute, bucket] of this.#buckets) {
      if (bucket.until <= now) {
        this.#buckets.delete(minute)
        this.#held -= bucket.size
        if (this.#last === bucket) this.#last = undefined
      } else {
        this.#nextExpiry = Math.min(this.#nextExpiry, bucket.until)
      }
    }
  }
}

/** Tables per bucket, chosen by the key's high word: each grows on its own, in small steps. */
const TABLES = 64
const INITIAL_PLACES = 64

/**
 * One minute's keys, in 64 tables: a table that doubles frees a block at most 1/64 of the bucket,
 * which the allocator reuses for the next growth, where one large table would leave its old
 * blocks to the process (the RSS kept them: 24 bytes a nonce against 17 in the tables).
 */
class Bucket {
  readonly minute: number
  /** Unix ms when the minute leaves the window. */
  until: number
  size = 0
  readonly #tables = Array.from({ length: TABLES }, () => new Table())

  constructor (minute: number, until: number) {
    this.minute = minute
    this.until = until
  }

  get bytes (): number {
    let bytes = 0
    for (const table of this.#tables) bytes += table.words.byteLength
    return bytes
  }

  /** False when the key is already here. */
  add (high: number, low: number): boolean {
    if (!this.#tables[high & (TABLES - 1)]!.add(high, low)) return false
    this.size++
    return true
  }
}

/** Open addressing, probed linearly: pairs of 32-bit words, `high` at even indexes, `low` after it. */
class Table {
  words = new Uint32Array(INITIAL_PLACES * 2)
  #mask = INITIAL_PLACES - 1
  #limit = INITIAL_PLACES * 3 / 4
  #size = 0

  /** False when the key is already here. */
  add (high: number, low: number): boolean {
    const words = this.words
    const mask = this.#mask
    // `low` is uniform (a hash), so it spreads the keys by itself.
    for (let place = low & mask; ; place = (place + 1) & mask) {
      const at = place * 2
      const h = words[at]!
      const l = words[at + 1]!
      if (h === high && l === low) return false
      if (h === 0 && l === 0) {
        words[at] = high
        words[at + 1] = low
        if (++this.#size > this.#limit) this.#grow()
        return true
      }
    }
  }

  #grow (): void {
    const old = this.words
    // Twice the places: as many as the old table had words.
    const places = old.length
    const words = new Uint32Array(places * 2)
    const mask = places - 1
    for (let at = 0; at < old.length; at += 2) {
      const high = old[at]!
      const low = old[at + 1]!
      if (high === 0 && low === 0) continue
      let place = low & mask
      while (words[place * 2] !== 0 || words[place * 2 + 1] !== 0) place = (place + 1) & mask
      words[place * 2] = high
      words[place * 2 + 1] = low
    }
    this.words = words
    this.#mask = mask
    this.#limit = places * 3 / 4
  }
}
