import { performance } from 'node:perf_hooks'

/** What a deadline watches: a command that fails with `timedOut` unless settled by its deadline. */
export interface Deadlined {
  /** ioredis's, true once the command has its answer (or its error). */
  readonly isSettled: boolean
  timedOut: () => void
}

/**
 * ioredis's command timeout for many commands under one timer: a timer a command (ioredis's own
 * way) made a Timeout object, a closure and two calls into the timer lists for each nonce batch and
 * each turn's token reads. Commands of one timeout are watched in the order they were sent, which
 * is the order one connection's answers come in: a settling command is almost always the first,
 * let go at once (`settled`: its slot emptied, not only passed, or the list would hold every
 * command it passed, and what each refers to, until it empties, which under steady load is seldom;
 * whatever a command holds would then live long enough to reach the old generation, and every
 * young collection would copy it); the timer, armed for the first
 * one's deadline, fails each command past its own and arms again for the next. Unref'd: a command
 * in flight keeps the process up by its socket, not by its timer.
 *
 * The lists are used from `#first` to `#end` and never shortened, only emptied slot by slot: an
 * array cut to length 0 gives up its storage, and a busy gateway empties them every turn. Each
 * deadline is kept in a list of numbers beside its command, not on the command, where a fraction
 * of a millisecond would be a number object of its own.
 */
export class CommandDeadlines {
  readonly #ms: number
  readonly #clock: () => number
  /** The commands watched, in the order sent, and each one's deadline (on the clock, ms); the slots before `#first` are emptied. */
  readonly #watched: Array<Deadlined | undefined> = []
  readonly #deadlines: number[] = []
  /** Where the watched begin and end: those before `#first` are settled or failed, and let go. */
  #first = 0
  #end = 0
  #timer: NodeJS.Timeout | undefined

  /** `clock`: monotonic milliseconds, which tests step. */
  constructor (ms: number, clock: () => number = () => performance.now()) {
    this.#ms = ms
    this.#clock = clock
  }

  /** Commands watched and not yet let go (settled ones after an unsettled first stay until it goes). */
  get watching (): number {
    return this.#end - this.#first
  }

  watch (command: Deadlined): void {
    this.#deadlines[this.#end] = this.#clock() + this.#ms
    this.#watched[this.#end++] = command
    this.#timer ??= setTimeout(() => { this.#expire() }, this.#ms).unref()
  }

  /**
   * A command settling (ioredis says so before its `isSettled` is true): dropped, with those
   * settled after it, when it is the first; else when the first reaches it.
   */
  settled (command: Deadlined): void {
    if (this.#first === this.#end || this.#watched[this.#first] !== command) return
    this.#watched[this.#first++] = undefined
    this.#dropSettled()
  }

  #dropSettled (): void {
    const watched = this.#watched
    const end = this.#end
    let first = this.#first
    while (first < end && watched[first]!.isSettled) watched[first++] = undefined
    if (first === end) {
      first = 0
      this.#end = 0
    } else if (first > 1024 && first * 2 > end) {
      // The live part moved to the front, its old slots emptied.
      watched.copyWithin(0, first, end)
      this.#deadlines.copyWithin(0, first, end)
      watched.fill(undefined, end - first, end)
      this.#end = end - first
      first = 0
    }
    this.#first = first
  }

  /** Fails every unsettled command past its deadline (after the list is brought up to date); armed again for the next, if any is left. */
  #expire (): void {
    this.#timer = undefined
    const now = this.#clock()
    const watched = this.#watched
    const due: Deadlined[] = []
    let first = this.#first
    for (; first < this.#end; first++) {
      const command = watched[first]!
      if (!command.isSettled) {
        if (this.#deadlines[first]! > now) break
        due.push(command)
      }
      watched[first] = undefined
    }
    this.#first = first
    this.#dropSettled()
    if (this.#first < this.#end) this.#timer = setTimeout(() => { this.#expire() }, Math.max(1, this.#deadlines[this.#first]! - now)).unref()
    for (const command of due) command.timedOut()
  }
}
