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
  /** Usually one pair (the caller's `then`); more only when several wait on one result. */
  #waiting: Array<(settled: 'fulfilled' | 'rejected', value: unknown) => void> | undefined
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
    const next = new Pending<A | B>()
    const run = (settled: 'fulfilled' | 'rejected', value: unknown): void => {
      const callback = settled === 'fulfilled' ? onFulfilled : onRejected
      if (callback === undefined || callback === null) {
        next.#settle(settled, value)
        return
      }
      try {
        const result = callback(value as T)
        if (isThenable(result)) result.then((inner) => { next.resolve(inner) }, (error: unknown) => { next.reject(error) })
        else next.resolve(result)
      } catch (error) {
        next.reject(error)
      }
    }
    if (this.#settled !== 'no') run(this.#settled, this.#value)
    else if (this.#waiting === undefined) this.#waiting = [run]
    else this.#waiting.push(run)
    return next
  }

  #settle (settled: 'fulfilled' | 'rejected', value: unknown): void {
    if (this.#settled !== 'no') return
    this.#settled = settled
    this.#value = value
    const waiting = this.#waiting
    this.#waiting = undefined
    if (waiting === undefined) {
      if (settled === 'rejected') queueMicrotask(() => { if (!this.#waited) throw value })
      return
    }
    for (const run of waiting) run(settled, value)
  }
}

/** A promise, a Pending or any other thenable: a result still to come. */
export function isThenable<T> (value: unknown): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
