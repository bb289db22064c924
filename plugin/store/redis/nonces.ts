import { errors } from '../../http/errors.ts'
import { keyByte, keyWord, NONCE_KEY_BYTES, type NonceUse } from '../nonce-key.ts'
import { Pending } from '../pending.ts'
import { orUnavailable, type RedisContext, type ScriptReceiver } from './context.ts'
import { InAskersContext, type Answer } from './in-askers-context.ts'
import { IntegerIndex } from './integer-index.ts'
import { IntegerList } from './integer-list.ts'
import type { RedisKeys } from './keys.ts'
import type { CountedUse, NonceStats, QuotaCount } from '../records.ts'
import type { NonceLog, NonceReports } from '../roles.ts'

/** How the stats and a cluster's counters reach Redis (the batch goes through `RedisContext.script`). */
export interface NonceRedis {
  macgateNonceStats: (count: number, keys: string[]) => Promise<unknown>
  macgateCountQuotas: (count: number, keys: string[], args: number[]) => Promise<unknown>
  decr: (key: string) => Promise<unknown>
  mget: (keys: string[]) => Promise<Array<string | null>>
}

/**
 * Told of each batch's script call: seconds until it settled, whether it failed, how many nonces it
 * carried, and what the waiter answered for them (undefined when nothing).
 */
export type NonceObserver = ((command: string, seconds: number, failed: boolean, batchSize: number, waiters: unknown[] | undefined) => void) | undefined
/** Asked, in the caller's async context, who waits for a nonce joining a batch (a trace's request span), or undefined. */
export type NonceWaiter = (() => unknown) | undefined

/**
 * Sets per (slot tag, minute): 256, chosen by a byte of the keyed hash beyond the 64 compared. A set
 * of at most `set-max-intset-entries` (512 by default) integers is an intset, 8 bytes a member, where
 * a larger one is a hashtable at 50 to 65 bytes a member; 16 tags × 256 sets keep each under 512 up
 * to about 2,000,000 nonces a minute (35,000 requests a second on one Redis deployment).
 */
const SETS_PER_TAG = 256

/** Minutes whose set key names are kept for reuse (a busy minute names every set of every tag: 16 × 256 = 4,096). */
const MINUTES_NAMED = 3

/**
 * A turn's sets are told apart by (minute, tag, set) in a small integer (V8 keeps it unboxed, where
 * the whole minute's would be a heap number a request, slower to hash): minutes modulo this many,
 * more than a turn's nonces can span (their window is two skews of at most 60 minutes).
 */
const MINUTES_APART = 4096

/** Batches kept for later turns once answered: more than a turn has (one per tag) while Redis keeps up. */
const SPARE_BATCHES = 64

/**
 * The Redis store's replay memory: per (slot tag, minute), 256 sets whose members are the nonces'
 * 64-bit keyed hashes (`nonce-key.ts`) as integers, so that Redis keeps each set as an intset;
 * SADD answers fresh or replayed, and each set expires once, when its minute leaves the window.
 * No key per nonce. Sets spread over 16 tags by the keyed hash's tenth byte (its ninth picks the
 * set), evenly however few tokens carry the load, so that a cluster shares it.
 *
 * The nonces of one event-loop turn go to Redis together, as one script call at the turn's end
 * (`RedisContext.atTurnEnd`, in one write with the turn's token reads): a single Redis takes the
 * whole turn in one call, a cluster one call per tag. A nonce costs its request no promise:
 * each request's answer is a `Pending` the batch settles from the call's one answer.
 */
export class RedisNonces implements NonceLog, NonceReports {
  readonly #context: RedisContext
  readonly #redis: NonceRedis
  readonly #keys: RedisKeys
  readonly #perSlot: boolean
  readonly #observer: () => NonceObserver
  readonly #waiter: () => NonceWaiter
  readonly #clock: () => number
  /** A cluster's quota counters: one call per turn, before the nonces. */
  readonly #counters: CounterBatches
  /** This turn's batches: one on a single Redis (index 0), else one per slot tag; the list kept from turn to turn. */
  readonly #batches: Array<Batch | undefined> = Array.from({ length: 16 }, () => undefined)
  /** How many of them this turn has: the first schedules the turn's sending. */
  #open = 0
  /** Each slot's call parts, reused by its batch of every turn. */
  readonly #parts: Array<CallParts | undefined> = []
  /** Batches answered, for later turns to fill again (bounded: SPARE_BATCHES). */
  readonly #spare: Batch[] = []
  /** (minute × 16 + tag) of the sets written lately, with until when they may live: what the stats count. At most 16 per minute. */
  readonly #known = new Map<number, number>()
  /** Minute → its sets' key names by (tag × 256 + set), each made once for all the requests that meet its set (bounded: MINUTES_NAMED). */
  readonly #setKeys = new Map<number, Array<string | undefined>>()

  /** `perSlot` on a cluster: a script's keys must share a slot, so each tag's nonces go in a call of their own. */
  constructor (context: RedisContext, perSlot: boolean) {
    this.#context = context
    this.#redis = context.redis
    this.#keys = context.keys
    this.#perSlot = perSlot
    // Read when a batch is made and goes: `observeCommands` may set them after the store is made.
    this.#observer = () => context.observer
    this.#waiter = () => context.waiter
    this.#clock = context.clock
    this.#counters = new CounterBatches(context.redis)
  }

  useNonce (use: NonceUse): Pending<boolean> {
    const answer = new Pending<boolean>()
    const batch = this.#batchOf(use)
    batch.parts.plainArgs.add(this.#setIndex(batch, use))
    addKeyInteger(batch.parts.plainArgs, use.key)
    batch.plain[batch.plainCount++] = this.#answerOf(batch, answer)
    return answer
  }

  /**
   * A nonce behind a quota counter. On a single Redis the counter goes in the nonce's own script
   * call (checked first, counting first uses only): no call of its own. On a cluster the counter
   * cannot share the nonce's slot (one client's tokens spread over every tag), so the turn's
   * counters go first, together, in one call to their own tag; a counted nonce found replayed is
   * given back (DECR).
   */
  useCountedNonce (use: NonceUse, count: QuotaCount): PromiseLike<CountedUse> {
    if (this.#perSlot) return this.#countFirst(use, count)
    const answer = new Pending<CountedUse>()
    const batch = this.#batchOf(use)
    const counterKey = this.#counterKey(count)
    let counter = batch.parts.counters.get(counterKey)
    if (counter === undefined) {
      counter = batch.parts.keys.push(counterKey)
      batch.parts.counters.set(counterKey, counter)
      batch.parts.counterArgs.add(counter)
      batch.parts.counterArgs.add(count.ttlSeconds)
      batch.parts.counterArgs.add(count.limit)
    }
    batch.parts.countedArgs.add(this.#setIndex(batch, use))
    addKeyInteger(batch.parts.countedArgs, use.key)
    batch.parts.countedArgs.add(counter)
    batch.counted[batch.countedCount++] = this.#answerOf(batch, answer)
    return answer
  }

  /**
   * The nonce's answer as its batch keeps it. While a waiter asks (tracing), who waits for it is
   * kept for the batch's span, and the answer is told in the async context it was asked in: the
   * batch is answered in no request's, and what each request does next (its admission, its
   * proxying) is then its own. Nothing is kept or made otherwise.
   */
  #answerOf<T> (batch: Batch, answer: Pending<T>): Answer<T> {
    const waiter = this.#waiter()
    if (waiter === undefined) return answer
    const waiting = waiter()
    if (waiting !== undefined) (batch.waiters ??= []).push(waiting)
    return new InAskersContext(answer, 'macgate.nonce')
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
    return this.#keys.quotaCounter(window, name)
  }

  /** This turn's batch for the nonce's tag (one for all on a single Redis). */
  #batchOf ({ key }: NonceUse): Batch {
    return this.#batch(this.#perSlot ? keyByte(key, NONCE_KEY_BYTES + 1) & 15 : 0)
  }

  /** The index (1-based) of the nonce's set among the batch's keys, the set added to it when new. */
  #setIndex (batch: Batch, { key, minute, ttlSeconds }: NonceUse): number {
    // By the nonce's minute, so that a nonce meets the same set whenever it comes.
    const slot = keyByte(key, NONCE_KEY_BYTES + 1) & 15
    const set = slot * SETS_PER_TAG + keyByte(key, NONCE_KEY_BYTES)
    const setId = (minute % MINUTES_APART) * 16 * SETS_PER_TAG + set
    let setIndex = batch.parts.sets.get(setId)
    if (setIndex === 0) {
      setIndex = batch.parts.keys.push(this.#setKeyOf(minute, set))
      batch.parts.sets.set(setId, setIndex)
      batch.parts.setArgs.add(setIndex)
      batch.parts.setArgs.add(ttlSeconds)
      this.#written(minute * 16 + slot)
    }
    return setIndex
  }

  /** A (minute × 16 + tag) whose sets are written, known to the stats until its window ends. */
  #written (tagMinute: number): void {
    // The window's end: the minute's last second plus the longest skew (60 minutes) at most.
    if (!this.#known.has(tagMinute)) this.#known.set(tagMinute, (Math.floor(tagMinute / 16) + 62) * 60_000)
  }

  /** The key's name of the set (tag × 256 + set) of a minute. */
  #setKeyOf (minute: number, set: number): string {
    let names = this.#setKeys.get(minute)
    if (names === undefined) {
      // Minutes go by: the one named first is dropped.
      if (this.#setKeys.size >= MINUTES_NAMED) this.#setKeys.delete(this.#setKeys.keys().next().value!)
      names = new Array<string | undefined>(16 * SETS_PER_TAG)
      this.#setKeys.set(minute, names)
    }
    names[set] ??= this.#setKey(Math.floor(set / SETS_PER_TAG), minute, set % SETS_PER_TAG)
    return names[set]
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
    return this.#keys.nonceSet(slot, minute, set)
  }

  #batch (slot: number): Batch {
    let batch = this.#batches[slot]
    if (batch === undefined) {
      if (this.#open++ === 0) this.#context.atTurnEnd(this.#sendAll)
      const parts = this.#parts[slot] ??= new CallParts()
      batch = this.#spare.pop() ?? new Batch(this.#spare, parts)
      batch.parts = parts
      this.#batches[slot] = batch
    }
    return batch
  }

  readonly #sendAll = (): void => {
    const batches = this.#batches
    this.#open = 0
    for (let slot = 0; slot < batches.length; slot++) {
      const batch = batches[slot]
      if (batch === undefined) continue
      batches[slot] = undefined
      this.#send(batch)
    }
  }

  #send (batch: Batch): void {
    batch.observer = this.#observer()
    if (batch.observer !== undefined) batch.started = performance.now()
    const { parts } = batch
    // The command copies the keys as it is made: the parts are emptied for the next turn after.
    this.#context.script('macgateUseNonces', parts.keys, parts.takeArguments(), batch)
    parts.clear()
  }
}

/** Adds the nonce key's first 8 bytes as the signed 64-bit little-endian integer Redis keeps in its set. */
function addKeyInteger (list: IntegerList, key: string): void {
  list.addSigned64(keyWord(key, 4), keyWord(key, 0))
}

/** A plain nonce's first use, in the script's text of answers. */
const ONE = 0x31

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

/**
 * What a slot's batch builds its call in, kept for its batch of each turn (a batch is sent before
 * the next is made): the call's keys, the indexes that find a set or counter among them, and its
 * four script arguments. Emptied as the batch is sent (the command has copied the keys by then),
 * so that a turn makes no Map or array of its own for them (the sets' index, the one every turn
 * fills, is emptied without a new table: integer-index.ts). The keys' list is cut to length 0,
 * which gives up its storage: the command takes it whole, so it holds exactly the turn's keys.
 */
class CallParts {
  readonly keys: string[] = []
  readonly sets = new IntegerIndex()
  readonly counters = new Map<string, number>()
  readonly setArgs = new IntegerList()
  readonly counterArgs = new IntegerList()
  readonly plainArgs = new IntegerList()
  readonly countedArgs = new IntegerList()

  /** The four script arguments as strings, their lists emptied. */
  takeArguments (): string[] {
    return [this.setArgs.take(), this.counterArgs.take(), this.plainArgs.take(), this.countedArgs.take()]
  }

  /** The keys and their indexes emptied for the next turn. */
  clear (): void {
    this.keys.length = 0
    this.sets.clear()
    // A Map's `clear` makes a new table: only when there is something to clear (a turn seldom has counters).
    if (this.counters.size > 0) this.counters.clear()
  }
}

/**
 * One script call's worth: its parts (`CallParts`: the keys it touches, 1-based in the script,
 * and its sets', counters' and nonces' arguments), and each request's answer. The arguments are
 * lists of integers written as the script's texts (scripts.ts) as they come (integer-list.ts): one
 * string each when the call is sent, none per request. Once its call is answered, a batch goes to
 * the spare list for a later turn, its answer lists emptied slot by slot (an array cut to length 0
 * gives up its storage, which the next turn would make again).
 */
class Batch implements ScriptReceiver {
  /** Its slot's call being built (`CallParts`), until it is sent. */
  parts: CallParts
  /** Each request's answer, the first `plainCount` and `countedCount` of them. */
  readonly plain: Array<Answer<boolean> | undefined> = []
  plainCount = 0
  readonly counted: Array<Answer<CountedUse> | undefined> = []
  countedCount = 0
  /** What the waiter answered for its nonces (their requests' spans), made at the first one only. */
  waiters: unknown[] | undefined = undefined
  /** Told of the call as it settles (set as it is sent), and when it was sent (only with an observer). */
  observer: NonceObserver = undefined
  started = 0
  /** Where it goes once answered. */
  readonly #spare: Batch[]

  constructor (spare: Batch[], parts: CallParts) {
    this.#spare = spare
    this.parts = parts
  }

  /**
   * The script's answers: a text of one character per plain nonce, `1` (first use) or `0`; then
   * per counted nonce its status and its counter's value.
   */
  answered (value: unknown): void {
    this.#told(false)
    const answers = value as unknown[]
    const fresh = answers[0] as string
    for (let i = 0; i < this.plainCount; i++) this.plain[i]!.resolve(fresh.charCodeAt(i) === ONE)
    for (let i = 0; i < this.countedCount; i++) this.counted[i]!.resolve({ outcome: OUTCOMES[(answers[1 + 2 * i] as number) + 1]!, used: answers[2 + 2 * i] as number })
    this.#release()
  }

  /** Every request of the call answered with the store outage. */
  failed (cause: unknown): void {
    this.#told(true)
    const error = errors.storeUnavailable(undefined, { cause })
    for (let i = 0; i < this.plainCount; i++) this.plain[i]!.reject(error)
    for (let i = 0; i < this.countedCount; i++) this.counted[i]!.reject(error)
    this.#release()
  }

  #told (failed: boolean): void {
    this.observer?.('macgateUseNonces', (performance.now() - this.started) / 1000, failed, this.plainCount + this.countedCount, this.waiters)
  }

  /** Emptied, its answers let go, and kept for a later turn (unless enough are kept). */
  #release (): void {
    this.plain.fill(undefined, 0, this.plainCount)
    this.counted.fill(undefined, 0, this.countedCount)
    this.plainCount = 0
    this.countedCount = 0
    this.waiters = undefined
    this.observer = undefined
    if (this.#spare.length < SPARE_BATCHES) this.#spare.push(this)
  }
}

function sum (values: number[]): number {
  return values.reduce((total, value) => total + value, 0)
}
