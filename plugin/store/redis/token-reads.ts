import { Pending } from '../../core/pending.ts'
import type { RedisContext } from './context.ts'

/**
 * The access token reads of one event-loop turn (the verifier's token cache misses), sent together:
 * on a single Redis one MGET for the turn (setImmediate, as the nonce batch: requests read from
 * different sockets in one turn share it), each key's answer handed to its read's `Pending`. On a
 * cluster a turn's keys lie in as many slots as it has grants, so each read is a GET of its own.
 * Either way past the auto-pipeline (`RedisContext.send`): a read costs its request no promise,
 * and the turn one command and one write.
 */
export class TokenReads {
  readonly #context: RedisContext
  /** A cluster: one GET per read. */
  readonly #perKey: boolean
  /** This turn's keys, and the answer each read waits on, in the same order. */
  #keys: string[] = []
  #answers: Array<Pending<string | null>> = []

  constructor (context: RedisContext, perKey: boolean) {
    this.#context = context
    this.#perKey = perKey
  }

  /** The value at `key` (null when there is none), or the store outage. */
  read (key: string): Pending<string | null> {
    if (this.#perKey) return this.#context.send('get', [key])
    const answer = new Pending<string | null>()
    if (this.#keys.length === 0) setImmediate(() => { this.#sendTurn() })
    this.#keys.push(key)
    this.#answers.push(answer)
    return answer
  }

  #sendTurn (): void {
    const keys = this.#keys
    const answers = this.#answers
    this.#keys = []
    this.#answers = []
    this.#context.send<Array<string | null>>('mget', keys).then(
      (values) => { for (let i = 0; i < answers.length; i++) answers[i]!.resolve(values[i] ?? null) },
      (error: unknown) => { for (const answer of answers) answer.reject(error) }
    )
  }
}
