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
  /** `map`'s step and its argument: the result is the step's, of the value settled with. */
  #step: Step | undefined = undefined
  #stepArgument: unknown = undefined
  /** The receiver `deliver` gave it while nobody waited: a field, not a `Waiter`. */
  #receiver: Receiver<unknown> | undefined = undefined

  resolve (value: T): void {
    this.#settle('fulfilled', value)
  }

  reject (error: unknown): void {
    this.#settle('rejected', error)
  }

  then<A = T, B = never> (onFulfilled?: ((value: T) => A | PromiseLike<A>) | null, onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Pending<A | B> {
    const next = new Pending<A | B>()
    this.#wait(new Waiter(onFulfilled as Callback, onRejected as Callback, next, undefined))
    return next
  }

  /**
   * This Pending itself, its result now `step`'s of its value (a throw rejects it; a rejection
   * passes through, the step not called): `then` without a new Pending, a `Waiter` or a closure, for a
   * Pending with one consumer, the one that maps it (the Redis store's answer to a nonce, which the
   * verifier maps to the request's identity). Only before anyone waits on it, once; the step gives
   * a value, not a thenable.
   */
  map<A, W> (step: (value: T, argument: W) => A, argument: W): Pending<A> {
    if (this.#waited || this.#step !== undefined) throw new Error('map: a Pending is mapped once, before anyone waits on it')
    if (this.#settled === 'no') {
      this.#step = step as Step
      this.#stepArgument = argument
    } else if (this.#settled === 'fulfilled') {
      try {
        this.#value = step(this.#value as T, argument)
      } catch (error) {
        this.#settled = 'rejected'
        this.#value = error
        // As `#settle` does for a rejection: thrown unless someone waits by the next microtask.
        queueMicrotask(() => { if (!this.#waited) throw error })
      }
    }
    return this as unknown as Pending<A>
  }

  /**
   * Hands the result to `receiver`'s `fulfilled` or `rejected`, the end of a chain: no callback
   * made and no Pending given back (the MAC hook's admission); the first waiter's receiver is kept
   * as a field, no `Waiter` made. A throw from the receiver is thrown in a microtask of its own, as
   * an unhandled rejection would be, so that it cannot stop the settler (a batch settles every
   * request of its turn in one loop).
   */
  deliver (receiver: Receiver<T>): void {
    if (this.#waited || this.#settled !== 'no') return this.#wait(new Waiter(undefined, undefined, undefined, receiver as Receiver<unknown>))
    this.#waited = true
    this.#receiver = receiver as Receiver<unknown>
  }

  #wait (waiter: Waiter): void {
    this.#waited = true
    if (this.#settled !== 'no') waiter.run(this.#settled, this.#value)
    else if (this.#first === undefined) this.#first = waiter
    else (this.#others ??= []).push(waiter)
  }

  #settle (settled: 'fulfilled' | 'rejected', value: unknown): void {
    if (this.#settled !== 'no') return
    const step = this.#step
    if (step !== undefined) {
      this.#step = undefined
      if (settled === 'fulfilled') {
        try {
          value = step(value, this.#stepArgument)
        } catch (error) {
          settled = 'rejected'
          value = error
        }
      }
      this.#stepArgument = undefined
    }
    this.#settled = settled
    this.#value = value
    const receiver = this.#receiver
    const first = this.#first
    const others = this.#others
    this.#receiver = undefined
    this.#first = undefined
    this.#others = undefined
    if (receiver === undefined && first === undefined) {
      if (settled === 'rejected') queueMicrotask(() => { if (!this.#waited) throw value })
      return
    }
    if (receiver !== undefined) deliverTo(receiver, settled, value)
    first?.run(settled, value)
    if (others !== undefined) for (const waiter of others) waiter.run(settled, value)
  }
}

type Callback = ((value: unknown) => unknown) | null | undefined

/** `map`'s step: the value settled with, and the argument given with the step. */
type Step = (value: unknown, argument: unknown) => unknown

/** The end of a chain that takes a result as two methods (`Pending.deliver`): no closure per request. */
export interface Receiver<T> {
  fulfilled: (value: T) => void
  rejected: (reason: unknown) => void
}

/**
 * One waiter: a `then` (its callbacks, and the Pending it answers with the callback's result) or a
 * `deliver` (its receiver). One shape for both, so that `run` stays monomorphic.
 */
class Waiter {
  readonly onFulfilled: Callback
  readonly onRejected: Callback
  readonly next: Pending<unknown> | undefined
  readonly receiver: Receiver<unknown> | undefined

  constructor (onFulfilled: Callback, onRejected: Callback, next: Pending<unknown> | undefined, receiver: Receiver<unknown> | undefined) {
    this.onFulfilled = onFulfilled
    this.onRejected = onRejected
    this.next = next
    this.receiver = receiver
  }

  run (settled: 'fulfilled' | 'rejected', value: unknown): void {
    const receiver = this.receiver
    if (receiver !== undefined) return deliverTo(receiver, settled, value)
    const callback = settled === 'fulfilled' ? this.onFulfilled : this.onRejected
    const next = this.next!
    if (callback === undefined || callback === null) {
      if (settled === 'fulfilled') next.resolve(value)
      else next.reject(value)
      return
    }
    try {
      // The value alone, as a promise's callback gets it.
      const result = callback(value)
      if (isThenable(result)) result.then((inner) => { next.resolve(inner) }, (error: unknown) => { next.reject(error) })
      else next.resolve(result)
    } catch (error) {
      next.reject(error)
    }
  }
}

/** The result to a receiver (`Pending.deliver`); its throw thrown in a microtask, not at the settler. */
function deliverTo (receiver: Receiver<unknown>, settled: 'fulfilled' | 'rejected', value: unknown): void {
  try {
    if (settled === 'fulfilled') receiver.fulfilled(value)
    else receiver.rejected(value)
  } catch (error) {
    queueMicrotask(() => { throw error })
  }
}

/** A promise, a Pending or any other thenable: a result still to come. */
export function isThenable<T> (value: unknown): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
