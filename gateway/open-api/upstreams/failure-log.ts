// Upstream failures at warn, at most once a second per upstream and cause: a down upstream under
// load is one line a second with how many were left out, not a line (and a stack) per request.
import type { FastifyBaseLogger } from 'fastify'
import type { FailureCause } from './failure.ts'

interface Slot {
  /** When this upstream and cause last wrote a line (ms, the log's clock). */
  last: number
  /** Failures since, not written. */
  suppressed: number
}

export class FailureLog {
  readonly #log: FastifyBaseLogger | undefined
  readonly #now: () => number
  /** Keyed by upstream and cause: both from config and a fixed list, so bounded. */
  readonly #slots = new Map<string, Slot>()

  constructor (log: FastifyBaseLogger | undefined, now: () => number = Date.now) {
    this.#log = log
    this.#now = now
  }

  failed (upstream: string, instance: string, cause: FailureCause, error: Error | undefined): void {
    if (this.#log === undefined || cause === 'caller_gone') return
    const key = `${upstream} ${cause}`
    const now = this.#now()
    const slot = this.#slots.get(key)
    if (slot !== undefined && now - slot.last < 1000) {
      slot.suppressed++
      return
    }
    // The message only: a stack says nothing about an upstream that refused.
    this.#log.warn({ upstream, instance, cause, reason: error?.message, suppressed: slot?.suppressed ?? 0 }, 'upstream request failed')
    if (slot === undefined) this.#slots.set(key, { last: now, suppressed: 0 })
    else {
      slot.last = now
      slot.suppressed = 0
    }
  }

  ejected (upstream: string, instance: string, failures: number, forMs: number): void {
    this.#log?.warn({ upstream, instance, failures, ejectedForMs: forMs }, 'upstream instance skipped after failures in a row')
  }
}
