/**
 * A result that comes later, as a promise's does, without a promise: `then` keeps its callbacks and
 * they run when the result is settled (at once if it already is), with no microtask of their own.
 * The Redis nonce batch answers every request of an event-loop turn through one of these each, and
 * the verifier and the MAC hook chain on it: where promises cost a request three (the store's, the
 * verifier's, the hook's `then`), this costs none (the ladder's L7 counts them).
 *
 * Chaining behaves as a promise's: `then` gives a new Pending for the callback's result, a throw in
 * a callback rejects it, and `await` takes one as it takes any thenable. What differs is when the
 * callbacks run: synchronously inside `resolve`/`reject`, so a settler must call them from a turn of
 * its own (the batch settles from its script call's answer), never from inside the caller's code.
 * A rejection that nobody has waited for by the next microtask is thrown, as an unhandled rejection
 * would be: a failure is never lost silently. (The microtask's grace is for `await`, which calls
 * `then` one microtask late: a Pending settled from a promise's callback may beat it.)
 */
export class Pending<T> implements PromiseLike<T> {
  #settled: 'no' | 'fulfilled' | 'rejected' = 'no'
  #value: unknown
  /**
   * The first waiter (the caller's `then`, usually the only one) kept as plain fields, so that
   * chaining makes no closure or array per request; later waiters in `#others`.
   */
  #first: Waiter | undefined
  #others: Waiter[] | undefined
  /** Whether anyone has called `then`: a rejection is then theirs to handle. */
  #waited = false

  resolve (value: T): void {
    this.#settle('fulfilled', value)
  }

  reject (error: unknown): void {
    this.#settle('rejected', error)
  }

  then<A = T, B = never> (onFulfilled?: ((value: T) => A | PromiseLike<A>) | null, onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Pending<A | B> {
    this.#waited = true
    const waiter = new Waiter(onFulfilled as Callback, onRejected as Callback, new Pending<A | B>())
    if (this.#settled !== 'no') waiter.run(this.#settled, this.#value)
    else if (this.#first === undefined) this.#first = waiter
    else (this.#others ??= []).push(waiter)
    return waiter.next as Pending<A | B>
  }

  #settle (settled: 'fulfilled' | 'rejected', value: unknown): void {
    if (this.#settled !== 'no') return
    this.#settled = settled
    this.#value = value
    const first = this.#first
    const others = this.#others
    this.#first = undefined
    this.#others = undefined
    if (first === undefined) {
      if (settled === 'rejected') queueMicrotask(() => { if (!this.#waited) throw value })
      return
    }
    first.run(settled, value)
    if (others !== undefined) for (const waiter of others) waiter.run(settled, value)
  }
}

type Callback = ((value: unknown) => unknown) | null | undefined

/** One `then`: its callbacks and the Pending it answers with the callback's result. */
class Waiter {
  readonly onFulfilled: Callback
  readonly onRejected: Callback
  readonly next: Pending<unknown>

  constructor (onFulfilled: Callback, onRejected: Callback, next: Pending<unknown>) {
    this.onFulfilled = onFulfilled
    this.onRejected = onRejected
    this.next = next
  }

  run (settled: 'fulfilled' | 'rejected', value: unknown): void {
    const callback = settled === 'fulfilled' ? this.onFulfilled : this.onRejected
    const next = this.next
    if (callback === undefined || callback === null) {
      if (settled === 'fulfilled') next.resolve(value)
      else next.reject(value)
      return
    }
    try {
      const result = callback(value)
      if (isThenable(result)) result.then((inner) => { next.resolve(inner) }, (error: unknown) => { next.reject(error) })
      else next.resolve(result)
    } catch (error) {
      next.reject(error)
    }
  }
}

/** A promise, a Pending or any other thenable: a result still to come. */
export function isThenable<T> (value: unknown): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
