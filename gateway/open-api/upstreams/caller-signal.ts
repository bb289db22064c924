// How an upstream request hears that its caller left: undici takes any object with
// addEventListener/removeEventListener as its `signal`.
import type { IncomingMessage } from 'node:http'
import type { Http2ServerRequest } from 'node:http2'

type Caller = IncomingMessage | Http2ServerRequest
type Listener = () => void

const SIGNAL = Symbol('macgate.callerSignal')
type Signalled = Caller & { [SIGNAL]?: CallerSignal }

/**
 * One per proxied request, made when its upstream request is sent. The caller's own stream would
 * do as an EventEmitter signal, but undici then wraps each listener in `once` and removing it turns
 * the stream's listener table into a dictionary: about 400 bytes and a slower table per request
 * (the ladder's L2). This keeps its listener (one at a time: a retry's request is sent after the
 * first has ended) in a field.
 */
export class CallerSignal {
  aborted = false
  /** undici makes its own RequestAbortedError when there is none: the failure `caller_gone` reads. */
  readonly reason = undefined
  #listener: Listener | undefined
  #others: Listener[] | undefined

  addEventListener (_type: 'abort', listener: Listener): void {
    if (this.#listener === undefined) this.#listener = listener
    else (this.#others ??= []).push(listener)
  }

  removeEventListener (_type: 'abort', listener: Listener): void {
    if (this.#listener === listener) this.#listener = undefined
    else if (this.#others !== undefined) this.#others = this.#others.filter((other) => other !== listener)
  }

  abort (): void {
    if (this.aborted) return
    this.aborted = true
    const listener = this.#listener
    const others = this.#others
    this.#listener = undefined
    this.#others = undefined
    listener?.()
    if (others !== undefined) for (const other of others) other()
  }
}

/** The caller's signal, made at its first upstream request. */
export function signalOf (caller: Caller): CallerSignal {
  const signalled = caller as Signalled
  signalled[SIGNAL] ??= new CallerSignal()
  return signalled[SIGNAL]
}

/** The caller left before its answer was written: its upstream request, if any is in flight, is cancelled. */
export function callerLeft (caller: Caller): void {
  (caller as Signalled)[SIGNAL]?.abort()
}
