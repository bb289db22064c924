import { Pending } from '../pending.ts'
import type { RedisContext } from './context.ts'

/**
 * The access token reads of one event-loop turn (the verifier's token cache misses), sent together:
 * on a single Redis one MGET for the turn, at its end with the turn's nonce batch
 * (`RedisContext.atTurnEnd`: one write for both), each key's answer handed to its read's
 * `Pending`. On a cluster a turn's keys lie in as many slots as it has grants, so each read is a
 * GET of its own.
 * Either way past the auto-pipeline (`RedisContext.send`): a read costs its request no promise,
 * and the turn one command and one write.
 */
export class TokenReads {
  readonly #context: RedisContext
  /** A cluster: one GET per read. */
  readonly #perKey: boolean
  /** This turn's keys, and each read's answer and parser, in the same order. */
  #keys: string[] = []
  #reads: Array<{ answer: Pending<unknown>, parse: (value: string | null) => unknown }> = []

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
    this.#reads.push({ answer: answer as Pending<unknown>, parse })
    return answer
  }

  readonly #sendTurn = (): void => {
    const keys = this.#keys
    const reads = this.#reads
    this.#keys = []
    this.#reads = []
    this.#context.send<Array<string | null>>('mget', keys).then(
      (values) => {
        for (let i = 0; i < reads.length; i++) {
          const { answer, parse } = reads[i]!
          let record: unknown
          try {
            record = parse(values[i] ?? null)
          } catch (error) {
            answer.reject(error)
            continue
          }
          answer.resolve(record)
        }
      },
      (error: unknown) => { for (const { answer } of reads) answer.reject(error) }
    )
  }
}
