import { errors } from '../../core/errors.ts'
import { NONCE_KEY_BYTES, type NonceUse } from '../nonce-key.ts'
import { orUnavailable } from './context.ts'
import type { CountedUse, NonceStats, QuotaCount } from '../records.ts'
import type { NonceLog, NonceReports } from '../roles.ts'

/** How the nonces reach Redis: the batch and stats scripts, plain commands for the upgrade marker. */
export interface NonceRedis {
  macgateUseNonces: (...args: Array<number | Array<string | number | Buffer>>) => Promise<unknown>
  exists: (key: string) => Promise<number>
  set: (key: string, value: string, nx: 'NX') => Promise<unknown>
  get: (key: string) => Promise<string | null>
  macgateNonceStats: (count: number, keys: string[]) => Promise<unknown>
  macgateCountQuotas: (count: number, keys: string[], args: number[]) => Promise<unknown>
  decr: (key: string) => Promise<unknown>
  mget: (keys: string[]) => Promise<Array<string | null>>
}

/** Told of each batch's script call: seconds until it settled, whether it failed, and how many nonces it carried. */
export type NonceObserver = ((command: string, seconds: number, failed: boolean, batchSize: number) => void) | undefined

/**
 * The longest an old-layout nonce key (`{n:S}:TOKENHASH:NONCE`, one key per nonce, before the
 * minute sets) can live: its TTL ran to the end of its minute's window, at most 2 × skew + 2
 * minutes with the largest skew allowed (60). The nonces of the minutes up to that long after the
 * first start of this layout on a Redis that already held macgate's data are checked against their
 * old key too.
 */
export const LEGACY_WINDOW_MS = (2 * 60 + 2) * 60_000

/**
 * Sets per (slot tag, minute): 256, chosen by a byte of the keyed hash beyond the 64 compared. A set
 * of at most `set-max-intset-entries` (512 by default) integers is an intset, 8 bytes a member, where
 * a larger one is a hashtable at 50 to 65 bytes a member; 16 tags × 256 sets keep each under 512 up
 * to about 2,000,000 nonces a minute (35,000 requests a second on one Redis deployment).
 */
const SETS_PER_TAG = 256

/**
 * The Redis store's replay memory: per (slot tag, minute), 256 sets whose members are the nonces'
 * 64-bit keyed hashes (`nonce-key.ts`) as integers, so that Redis keeps each set as an intset;
 * SADD answers fresh or replayed, and each set expires once, when its minute leaves the window.
 * No key per nonce.
 *
 * The nonces of one event-loop turn go to Redis together, as one script call (setImmediate, not
 * nextTick: requests read from different sockets in one turn share a batch). Sets spread over 16
 * tags by another byte of the keyed hash, evenly however few tokens carry the load, so that a
 * cluster shares it: a single Redis takes the whole turn in one call, a cluster one call per tag. Each request costs one promise (its answer, read from the
 * batch's); each batch, its own and the script call's.
 */
export class RedisNonces implements NonceLog, NonceReports {
  readonly #redis: NonceRedis
  readonly #prefix: string
  readonly #perSlot: boolean
  readonly #observer: () => NonceObserver
  readonly #clock: () => number
  /** A cluster's quota counters: one call per turn, before the nonces. */
  readonly #counters: CounterBatches
  /** This turn's batches: one on a single Redis (index 0), else one per slot tag. */
  #batches: Array<Batch | undefined> = []
  /** Nonces of minutes before this one are also checked against their old-layout key; 0: none can exist. */
  #legacyMinute = 0
  /** (minute × 16 + tag) of the sets written lately, with until when they may live: what the stats count. At most 16 per minute. */
  readonly #known = new Map<number, number>()

  constructor (redis: NonceRedis, prefix: string, { perSlot, observer, clock }: { perSlot: boolean, observer: () => NonceObserver, clock: () => number }) {
    this.#redis = redis
    this.#prefix = prefix
    this.#perSlot = perSlot
    this.#observer = observer
    this.#clock = clock
    this.#counters = new CounterBatches(redis)
  }

  /**
   * Learns whether old-layout nonces may still live. The first start of this layout marks the Redis
   * with the time; on a Redis macgate had already used (its server secret is there), that starts the
   * upgrade window, and on a new one there is none.
   */
  async start (now = this.#clock()): Promise<void> {
    const marker = `${this.#prefix}nonce-layout:buckets`
    const upgrading = await this.#redis.exists(`${this.#prefix}secret`) === 1
    await this.#redis.set(marker, upgrading ? String(now) : '0', 'NX')
    const since = Number(await this.#redis.get(marker))
    this.#legacyMinute = since > 0 ? Math.ceil((since + LEGACY_WINDOW_MS) / 60_000) : 0
  }

  useNonce (use: NonceUse): Promise<boolean> {
    const [batch, index] = this.#add(use, 0, 0)
    return batch.answers.then((answers) => answers[2 * index] === 1)
  }

  /**
   * A nonce behind a quota counter. On a single Redis the counter goes in the nonce's own script
   * call (checked first, counting first uses only): no call of its own. On a cluster the counter
   * cannot share the nonce's slot (one client's tokens spread over every tag), so the turn's
   * counters go first, together, in one call to their own tag; a counted nonce found replayed is
   * given back (DECR).
   */
  useCountedNonce (use: NonceUse, count: QuotaCount): Promise<CountedUse> {
    if (this.#perSlot) return this.#countFirst(use, count)
    const [batch, index] = this.#add(use, this.#counterKey(count), count.ttlSeconds, count.limit)
    return batch.answers.then((answers) => ({ outcome: OUTCOMES[answers[2 * index]! + 1]!, used: answers[2 * index + 1]! }))
  }

  /** The counts of the named counters in a window: one MGET (on a cluster all share their tag). */
  async quotaUsed (names: string[], window: number): Promise<number[]> {
    if (names.length === 0) return []
    const values = await orUnavailable(this.#redis.mget(names.map((name) => this.#counterKey({ name, window }))))
    return values.map((value) => Number(value ?? 0))
  }

  async #countFirst (use: NonceUse, count: QuotaCount): Promise<CountedUse> {
    const key = this.#counterKey(count)
    const used = await this.#counters.count(key, count.limit, count.ttlSeconds)
    if (used < 0) return { outcome: 'over', used: -1 - used }
    if (await this.useNonce(use)) return { outcome: 'fresh', used }
    this.#redis.decr(key).catch(() => {}) // at worst one request too many counted, until the window ends
    return { outcome: 'replayed', used: used - 1 }
  }

  /** The counter of a (client, route) in a window; on a cluster, all in one tag of their own. */
  #counterKey ({ name, window }: { name: string, window: number }): string {
    return `${this.#prefix}{q}:${window}:${name}`
  }

  /** Puts a nonce (and its counter's key, if any) in this turn's batch of its tag: the batch and its place. */
  #add ({ key, minute, ttlSeconds, tokenHash, nonce }: NonceUse, counterKey: string | 0, counterTtl: number, limit = 0): [Batch, number] {
    // By the nonce's minute, so that a nonce meets the same set whenever it comes: minutes an old
    // key may cover keep the old layout's tag (the token's), with the old key beside them.
    const legacy = minute < this.#legacyMinute
    const slot = legacy ? tokenHash.charCodeAt(0) & 15 : key[NONCE_KEY_BYTES + 1]! & 15
    const batch = this.#batch(this.#perSlot ? slot : 0)
    const set = key[NONCE_KEY_BYTES]!
    const setId = (minute * 16 + slot) * SETS_PER_TAG + set
    let setIndex = batch.sets.get(setId)
    if (setIndex === undefined) {
      setIndex = batch.keys.push(this.#setKey(slot, minute, set))
      batch.sets.set(setId, setIndex)
      batch.setArgs.push(setIndex, ttlSeconds)
      batch.minutes.add(minute * 16 + slot)
    }
    let counter = 0
    if (counterKey !== 0) {
      counter = batch.counters.get(counterKey) ?? 0
      if (counter === 0) {
        counter = batch.keys.push(counterKey)
        batch.counters.set(counterKey, counter)
        batch.counterArgs.push(counter, counterTtl)
      }
    }
    // The old layout's key, in the same tag: only for minutes one may cover.
    const old = legacy ? batch.keys.push(`${this.#prefix}{n:${slot.toString(16)}}:${tokenHash}:${nonce}`) : 0
    // A decimal integer: what Redis keeps in an intset.
    batch.nonceArgs.push(setIndex, key.readBigInt64LE(0).toString(), old, counter, limit)
    return [batch, batch.size++]
  }

  /**
   * Nonces held in the sets of each (tag, minute) this instance wrote to (every instance writes the
   * same ones), and Redis's MEMORY USAGE of those sets: one script call per tag.
   */
  async nonceStats (now = this.#clock()): Promise<NonceStats> {
    const byTag = new Map<number, string[]>()
    for (const [tagMinute, until] of this.#known) {
      if (until <= now) {
        this.#known.delete(tagMinute)
        continue
      }
      const tag = tagMinute % 16
      const keys = byTag.get(tag) ?? []
      for (let set = 0; set < SETS_PER_TAG; set++) keys.push(this.#setKey(tag, Math.floor(tagMinute / 16), set))
      byTag.set(tag, keys)
    }
    const counts = await orUnavailable(Promise.all([...byTag.values()].map(async (keys) => await this.#redis.macgateNonceStats(keys.length, keys) as [number, number])))
    return { held: sum(counts.map(([held]) => held)), bytes: sum(counts.map(([, bytes]) => bytes)) }
  }

  #setKey (slot: number, minute: number, set: number): string {
    return `${this.#prefix}{n:${slot.toString(16)}}:${minute}:${set.toString(16)}`
  }

  #batch (slot: number): Batch {
    let batch = this.#batches[slot]
    if (batch === undefined) {
      if (this.#batches.every((other) => other === undefined)) setImmediate(() => this.#sendAll())
      batch = new Batch()
      this.#batches[slot] = batch
    }
    return batch
  }

  #sendAll (): void {
    const batches = this.#batches
    this.#batches = []
    const now = this.#clock()
    for (const batch of batches) if (batch !== undefined) this.#send(batch, now)
  }

  #send (batch: Batch, now: number): void {
    for (const tagMinute of batch.minutes) {
      // The window's end: the minute's last second plus the longest skew (60 minutes) at most.
      if (!this.#known.has(tagMinute)) this.#known.set(tagMinute, (Math.floor(tagMinute / 16) + 62) * 60_000)
    }
    const observer = this.#observer()
    const started = observer === undefined ? 0 : performance.now()
    const told = (failed: boolean): void => observer?.('macgateUseNonces', (performance.now() - started) / 1000, failed, batch.size)
    // Arrays, not spread: ioredis flattens them, and a long turn would overflow a spread call.
    this.#redis.macgateUseNonces(batch.keys.length, batch.keys, batch.setArgs.length / 2, batch.counterArgs.length / 2, batch.setArgs, batch.counterArgs, batch.nonceArgs).then(
      (fresh) => {
        told(false)
        batch.settle(fresh as number[])
      },
      (error: unknown) => {
        told(true)
        batch.fail(errors.storeUnavailable(undefined, { cause: error }))
      }
    )
  }
}

/** The answers of the nonce script, by its per-nonce status (-1, 0, 1). */
const OUTCOMES: Array<CountedUse['outcome']> = ['over', 'replayed', 'fresh']

/** A cluster's quota counters of one event-loop turn, counted in one script call (their tag is `{q}`). */
class CounterBatches {
  readonly #redis: NonceRedis
  #keys: string[] = []
  #args: number[] = []
  #answers: Promise<number[]> | undefined

  constructor (redis: NonceRedis) {
    this.#redis = redis
  }

  /** The counter's value after counting one, or -1 - its value when at its limit (not counted). */
  count (key: string, limit: number, ttlSeconds: number): Promise<number> {
    if (this.#answers === undefined) {
      this.#answers = new Promise((resolve, reject) => setImmediate(() => {
        const keys = this.#keys
        const args = this.#args
        this.#keys = []
        this.#args = []
        this.#answers = undefined
        this.#redis.macgateCountQuotas(keys.length, keys, args).then((answers) => resolve(answers as number[]), (error: unknown) => reject(errors.storeUnavailable(undefined, { cause: error })))
      }))
    }
    const index = this.#keys.push(key) - 1
    this.#args.push(limit, ttlSeconds)
    return this.#answers.then((answers) => answers[index]!)
  }
}

/** One script call's worth: the keys it touches (1-based in the script), its sets' arguments, its nonces'. */
class Batch {
  readonly keys: string[] = []
  /** Set id ((minute × 16 + tag) × 256 + set) → its key's index. */
  readonly sets = new Map<number, number>()
  /** The (minute × 16 + tag) of its sets. */
  readonly minutes = new Set<number>()
  /** Per set: its key's index, its lifetime in seconds. */
  readonly setArgs: number[] = []
  /** Quota counter key → its key's index. */
  readonly counters = new Map<string, number>()
  /** Per counter: its key's index, its lifetime in seconds. */
  readonly counterArgs: number[] = []
  /** Per nonce: its set's index, its keyed hash (a decimal integer), its old-layout key's index or 0, its counter's index or 0, its limit. */
  readonly nonceArgs: Array<number | string> = []
  size = 0
  readonly answers: Promise<number[]>
  settle!: (fresh: number[]) => void
  fail!: (error: Error) => void

  constructor () {
    this.answers = new Promise((resolve, reject) => {
      this.settle = resolve
      this.fail = reject
    })
  }
}

function sum (values: number[]): number {
  return values.reduce((total, value) => total + value, 0)
}
