import { Pending } from '../pending.ts'
import type { RedisContext } from './context.ts'
import { InAskersContext, type Answer } from './in-askers-context.ts'

/** A turn's waiters while tracing asks and none of its readers is recorded (never added to): no span for its MGET. */
const NONE_RECORDED: unknown[] = []

/** A read waiting for the turn's MGET: its answer (while tracing asks, told in its reader's async context) and parser. */
interface TokenRead {
  readonly answer: Answer<unknown>
  readonly parse: (value: string | null) => unknown
}

/**
 * The access token reads of one event-loop turn (the verifier's token cache misses), sent together:
 * on a single Redis one MGET for the turn, at its end with the turn's nonce batch
 * (`RedisContext.atTurnEnd`: one write for both), each key's answer handed to its read's
 * `Pending`. On a cluster a turn's keys lie in as many slots as it has grants, so each read is a
 * GET of its own.
 * Either way past the auto-pipeline (`RedisContext.send`): a read costs its request no promise,
 * and the turn one command and one write.
 *
 * While tracing asks (the context's `waiter`), the MGET names who waits for each of its keys, as a
 * nonce batch does (one span linked to each request it served), and each read is answered in its
 * reader's async context, not the turn's first: what the request does next (its nonce joining a
 * batch) is then its own.
 */
export class TokenReads {
  readonly #context: RedisContext
  /** A cluster: one GET per read. */
  readonly #perKey: boolean
  /** This turn's keys, and each read, in the same order; what the waiter answered for them (tracing only). */
  #keys: string[] = []
  #reads: TokenRead[] = []
  #waiters: unknown[] | undefined = undefined

  constructor (context: RedisContext, perKey: boolean) {
    this.#context = context
    this.#perKey = perKey
  }

  /** The record at `key` as `parse` reads it (from null when there is none), or the store outage. */
  read<T> (key: string, parse: (value: string | null) => T): Pending<T> {
    if (this.#perKey) return this.#context.send<string | null>('get', [key]).then(parse)
    const answer = new Pending<T>()
    if (this.#keys.length === 0) this.#context.atTurnEnd(this.#sendTurn)
    this.#keys.push(key)
    const waiter = this.#context.waiter
    let told: Answer<unknown> = answer as Pending<unknown>
    if (waiter !== undefined) {
      told = new InAskersContext(answer as Pending<unknown>, 'macgate.token-read')
      const waiting = waiter()
      if (waiting !== undefined) (this.#waiters ??= []).push(waiting)
    }
    this.#reads.push({ answer: told, parse })
    return answer
  }

  readonly #sendTurn = (): void => {
    const keys = this.#keys
    const reads = this.#reads
    // While tracing asks, a list even when empty: the command was sent for these requests, none of them recorded.
    const waiters = this.#waiters ?? (this.#context.waiter === undefined ? undefined : NONE_RECORDED)
    this.#keys = []
    this.#reads = []
    this.#waiters = undefined
    this.#context.send<Array<string | null>>('mget', keys, waiters).then(
      (values) => { for (let i = 0; i < reads.length; i++) answerRead(reads[i]!, values[i] ?? null) },
      (error: unknown) => { for (const { answer } of reads) answer.reject(error) }
    )
  }
}

/** A read's answer: its record as its parser reads the value, or the parser's throw. */
function answerRead ({ answer, parse }: TokenRead, value: string | null): void {
  let record: unknown
  try {
    record = parse(value)
  } catch (error) {
    answer.reject(error)
    return
  }
  answer.resolve(record)
}
