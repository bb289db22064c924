import { AsyncResource } from 'node:async_hooks'
import type { Pending } from '../pending.ts'

/** How a request's answer is settled by what answers several requests at once: the `Pending` itself, or told in its asker's context. */
export interface Answer<T> {
  resolve: (value: T) => void
  reject: (error: unknown) => void
}

/**
 * A request's answer told in the async context it was asked in. What answers several requests at
 * once (a nonce batch, a turn's token reads) is answered in no one request's context; while tracing
 * asks, each request's answer is wrapped in this, so that what the request does next is its own.
 */
export class InAskersContext<T> extends AsyncResource implements Answer<T> {
  readonly #answer: Pending<T>

  constructor (answer: Pending<T>, type: string) {
    super(type)
    this.#answer = answer
  }

  resolve (value: T): void {
    this.runInAsyncScope(this.#answer.resolve, this.#answer, value)
  }

  reject (error: unknown): void {
    this.runInAsyncScope(this.#answer.reject, this.#answer, error)
  }
}
