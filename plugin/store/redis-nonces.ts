import { errors } from '../core/errors.js'
import type { NonceUse } from './nonce-key.js'
import type { NonceStats } from './store.js'

/** How the nonces reach Redis: the batch script, plain commands for the upgrade marker and the stats. */
export interface NonceRedis {
  macgateUseNonces: (...args: Array<number | Array<string | number | Buffer>>) => Promise<unknown>
  exists: (key: string) => Promise<number>
  set: (key: string, value: string, nx: 'NX') => Promise<unknown>
  get: (key: string) => Promise<string | null>
  scard: (key: string) => Promise<number>
  memory: (subcommand: 'USAGE', key: string) => Promise<unknown>
}

/** Told of each batch's script call: seconds until it settled, and whether it failed. */
export type NonceObserver = ((command: string, seconds: number, failed: boolean) => void) | undefined

/**
 * The longest an old-layout nonce key (`{n:S}:TOKENHASH:NONCE`, one key per nonce, before the
 * minute buckets) can live: its TTL ran to the end of its minute's window, at most 2 × skew + 2
 * minutes with the largest skew allowed (60). For that long after the first start of this layout
 * on a Redis that already held macgate's data, each nonce's old key is checked too.
 */
export const LEGACY_WINDOW_MS = (2 * 60 + 2) * 60_000

/**
 * The Redis store's replay memory: one set per (slot tag, minute), whose members are the nonces'
 * 8-byte keyed hashes (`nonce-key.ts`); SADD answers fresh or replayed, and the set expires once,
 * when its minute leaves the window. No key per nonce.
 *
 * The nonces of one event-loop turn go to Redis together, as one script call (setImmediate, not
 * nextTick: requests read from different sockets in one turn share a batch). Buckets spread over 16
 * tags by token hash, so that a cluster shares the load: a single Redis takes the whole turn in one
 * call, a cluster one call per tag. Each request costs one promise (its answer, read from the
 * batch's); each batch, its own and the script call's.
 */
export class RedisNonces {
  readonly #redis: NonceRedis
  readonly #prefix: string
  readonly #perSlot: boolean
  readonly #observer: () => NonceObserver
  /** This turn's batches: one on a single Redis (index 0), else one per slot tag. */
  #batches: Array<Batch | undefined> = []
  /** Until when old-layout keys are also checked (Unix ms); 0: none can exist. */
  #legacyUntil = 0
  /** Bucket keys written lately, with when they expire: what the stats count. At most 16 per minute in the window. */
  readonly #known = new Map<string, number>()

  constructor (redis: NonceRedis, prefix: string, { perSlot, observer }: { perSlot: boolean, observer: () => NonceObserver }) {
    this.#redis = redis
    this.#prefix = prefix
    this.#perSlot = perSlot
    this.#observer = observer
  }

  /**
   * Learns whether old-layout nonces may still live. The first start of this layout marks the Redis
   * with the time; on a Redis macgate had already used (its server secret is there), that starts the
   * upgrade window, and on a new one there is none.
   */
  async start (now = Date.now()): Promise<void> {
    const marker = `${this.#prefix}nonce-layout:buckets`
    const upgrading = await this.#redis.exists(`${this.#prefix}secret`) === 1
    await this.#redis.set(marker, upgrading ? String(now) : '0', 'NX')
    const since = Number(await this.#redis.get(marker))
    this.#legacyUntil = since > 0 ? since + LEGACY_WINDOW_MS : 0
  }

  use ({ key, minute, ttlSeconds, tokenHash, nonce }: NonceUse): Promise<boolean> {
    const slot = tokenHash.charCodeAt(0) & 15
    const batch = this.#batch(this.#perSlot ? slot : 0)
    const bucketId = minute * 16 + slot
    let bucket = batch.buckets.get(bucketId)
    if (bucket === undefined) {
      bucket = batch.keys.push(`${this.#prefix}{n:${slot.toString(16)}}:${minute}`)
      batch.buckets.set(bucketId, bucket)
      batch.bucketArgs.push(bucket, ttlSeconds)
    }
    // The old layout's key, in the same tag: only while one can still live.
    const old = this.#legacyUntil > 0 && Date.now() < this.#legacyUntil
      ? batch.keys.push(`${this.#prefix}{n:${slot.toString(16)}}:${tokenHash}:${nonce}`)
      : 0
    batch.nonceArgs.push(bucket, key, old)
    const index = batch.size++
    return batch.answers.then((fresh) => fresh[index] === 1)
  }

  /** Nonces held in the buckets this instance wrote to (every instance writes the same ones), and Redis's estimate of their memory. */
  async stats (now = Date.now()): Promise<NonceStats> {
    for (const [key, until] of this.#known) if (until <= now) this.#known.delete(key)
    const keys = [...this.#known.keys()]
    try {
      const [held, bytes] = await Promise.all([
        Promise.all(keys.map(async (key) => await this.#redis.scard(key))),
        Promise.all(keys.map(async (key) => Number(await this.#redis.memory('USAGE', key) ?? 0)))
      ])
      return { held: sum(held), bytes: sum(bytes) }
    } catch (error) {
      throw errors.storeUnavailable(undefined, { cause: error })
    }
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
    const now = Date.now()
    for (const batch of batches) if (batch !== undefined) this.#send(batch, now)
  }

  #send (batch: Batch, now: number): void {
    for (let i = 0; i < batch.bucketArgs.length; i += 2) {
      this.#known.set(batch.keys[batch.bucketArgs[i]! - 1]!, now + batch.bucketArgs[i + 1]! * 1000)
    }
    const observer = this.#observer()
    const started = observer === undefined ? 0 : performance.now()
    const told = (failed: boolean): void => observer?.('macgateUseNonces', (performance.now() - started) / 1000, failed)
    // Arrays, not spread: ioredis flattens them, and a long turn would overflow a spread call.
    this.#redis.macgateUseNonces(batch.keys.length, batch.keys, batch.bucketArgs.length / 2, batch.bucketArgs, batch.nonceArgs).then(
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

/** One script call's worth: the keys it touches (1-based in the script), its buckets' arguments, its nonces'. */
class Batch {
  readonly keys: string[] = []
  /** Bucket id (minute × 16 + slot) → its key's index. */
  readonly buckets = new Map<number, number>()
  /** Per bucket: its key's index, its lifetime in seconds. */
  readonly bucketArgs: number[] = []
  /** Per nonce: its bucket's index, its keyed hash, its old-layout key's index or 0. */
  readonly nonceArgs: Array<number | Buffer> = []
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
