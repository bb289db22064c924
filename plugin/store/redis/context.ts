import { AsyncResource } from 'node:async_hooks'
import { createHash } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import { errors } from '../../http/errors.ts'
import { Pending } from '../pending.ts'
import type { RedisKeys } from './keys.ts'
import { scripts, type ScriptName } from './scripts.ts'
import { WrittenCommand, type CommandReceiver } from './written-command.ts'

type ScriptArgument = string | number | Buffer
/** The client with our scripts defined on it (`scripts.ts`). */
export type Scripted = (Redis | Cluster) & Record<ScriptName, (...args: Array<ScriptArgument | ScriptArgument[]>) => Promise<unknown>>

/**
 * Told of every Redis command the store sends: its name, seconds until it settled, whether it
 * failed, for a nonce batch its size, and for a command sent for several requests (a nonce batch,
 * a turn's token reads) its waiters (what the waiter answered for each).
 */
export type CommandObserver = (command: string, seconds: number, failed: boolean, batchSize?: number, waiters?: unknown[]) => void

/** Where a script call's answer goes (`RedisContext.script`): methods, so that a call makes no callback of its own. */
export interface ScriptReceiver {
  answered: (value: unknown) => void
  failed: (error: unknown) => void
}

/**
 * What every role of the Redis store shares: the client, the key names, the store's clock, and
 * the one way a command's answer is awaited (`answer`), which is where an outage becomes a 503.
 */
export class RedisContext {
  readonly redis: Scripted
  readonly keys: RedisKeys
  readonly clock: () => number
  /** Told of every command from `observeCommands` on (the plugin's store latency metric). */
  observer: CommandObserver | undefined
  /** Asked who waits as each nonce joins a batch (a trace's request span), when tracing asks. */
  waiter: (() => unknown) | undefined
  /** Each script's SHA1, as Redis names it, computed once. */
  readonly #shas = new Map<ScriptName, string>()
  /**
   * What goes at this turn's end (`atTurnEnd`), the first `#taskCount` of the list, and the list the
   * last turn's went in, kept for the next; emptied slot by slot, never cut to length 0, which
   * would give up its storage every turn.
   */
  #turnTasks: Array<(() => void) | undefined> = []
  #taskCount = 0
  #spareTasks: Array<(() => void) | undefined> = []

  constructor (redis: Scripted, keys: RedisKeys, clock: () => number) {
    this.redis = redis
    this.keys = keys
    this.clock = clock
  }

  /**
   * A sent command's answer, timed for the observer when there is one; a client error becomes the
   * store outage. A bound function, so that a role can take it out of the context.
   */
  readonly answer = async <T>(command: string, sent: Promise<T>): Promise<T> => {
    const observer = this.observer
    if (observer === undefined) return await orUnavailable(sent)
    const started = performance.now()
    try {
      const answer = await orUnavailable(sent)
      observer(command, (performance.now() - started) / 1000, false)
      return answer
    } catch (error) {
      observer(command, (performance.now() - started) / 1000, true)
      throw error
    }
  }

  /**
   * Runs `task` at the end of this event-loop turn (setImmediate, not nextTick: requests read from
   * different sockets in one turn share it), with every other task of the turn: the turn's nonce
   * batch and its token reads (`nonces.ts`, `token-reads.ts`). On a single Redis, when there are
   * several, its socket is corked while they write, so that their commands go in one system call,
   * not one each, and Redis answers them together. (A cluster's commands go to several sockets,
   * each written as ioredis writes it.)
   */
  atTurnEnd (task: () => void): void {
    if (this.#taskCount === 0) setImmediate(this.#endTurn)
    this.#turnTasks[this.#taskCount++] = task
  }

  readonly #endTurn = (): void => {
    const tasks = this.#turnTasks
    const count = this.#taskCount
    // A lone command is written as it is: a corked socket keeps an entry for each write and goes
    // through its writev path on uncorking, about 480 heap bytes a turn for nothing to join.
    const stream = count < 2 || this.redis.isCluster ? undefined : (this.redis as Redis).stream
    stream?.cork()
    // A task that schedules another (none does today) schedules it for the next turn, in the other list.
    this.#turnTasks = this.#spareTasks
    this.#taskCount = 0
    try {
      for (let i = 0; i < count; i++) tasks[i]!()
    } finally {
      stream?.uncork()
      tasks.fill(undefined, 0, count)
      this.#spareTasks = tasks
    }
  }

  /**
   * One command sent as it is, past the auto-pipeline (whose wrapping costs a command several
   * promises and ticks), its answer as a `Pending` that the command settles itself (no promise:
   * written-command.ts), timed and turned into the outage as `answer` does. For what many requests
   * send (the verifier's token reads on a cache miss, `token-reads.ts`). `waiters`: what the waiter
   * answered for those it is sent for (their requests' spans), passed on to the observer; a command
   * sent for several is answered as it comes, in no one sender's context (each of its senders
   * carries its own: token-reads.ts).
   */
  send<T> (name: string, args: Array<string | number>, waiters?: unknown[]): Pending<T> {
    const answer = new CommandAnswer<T>(name, this.observer, waiters)
    void this.redis.sendCommand(new WrittenCommand(name, args, waiters === undefined ? this.#inSendersContext(answer) : answer))
    return answer
  }

  /**
   * A script of `scripts.ts` called by its SHA1 (EVALSHA), written as `send` writes: past ioredis's
   * own script call, which adds a promise, a closure and copies of the arguments to every call. The
   * command copies `keys` and `args` as it is made: the caller may reuse them at once. Its
   * answer or its failure goes to `receiver`, as ioredis gave it. A Redis that does not
   * know the script (restarted, or its scripts flushed) answers NOSCRIPT: the call is made again
   * through ioredis's defined command, which sends the script's text and so loads it for the next.
   * Answered as it comes, in no sender's context: the script is a nonce batch, sent for several
   * requests, and each of them carries its own (nonces.ts).
   */
  script (name: ScriptName, keys: string[], args: string[], receiver: ScriptReceiver): void {
    void this.redis.sendCommand(new WrittenCommand('evalsha', [this.#sha(name), keys.length, keys, args], new ScriptCall(this.redis, name, receiver), 'utf8'))
  }

  /**
   * A command's answer comes in ioredis's reply handler, out of its sender's async context, where
   * a promise's callback would have run in it. Only tracing reads that context (its spans find
   * their parent there, and a request's nonce joins a batch there after its token read): while it
   * asks (`waiter`), the receiver is told in the sender's context, as before; otherwise as it is.
   */
  #inSendersContext (receiver: CommandReceiver): CommandReceiver {
    return this.waiter === undefined ? receiver : new InSendersContext(receiver)
  }

  #sha (name: ScriptName): string {
    let sha = this.#shas.get(name)
    if (sha === undefined) {
      sha = createHash('sha1').update(scripts[name].lua).digest('hex')
      this.#shas.set(name, sha)
    }
    return sha
  }
}

/** `RedisContext.send`'s answer: the Pending its caller waits on, settled by the command (its receiver), timed for the observer. */
class CommandAnswer<T> extends Pending<T> implements CommandReceiver {
  readonly #name: string
  readonly #observer: CommandObserver | undefined
  readonly #waiters: unknown[] | undefined
  readonly #started: number

  constructor (name: string, observer: CommandObserver | undefined, waiters: unknown[] | undefined) {
    super()
    this.#name = name
    this.#observer = observer
    this.#waiters = waiters
    this.#started = observer === undefined ? 0 : performance.now()
  }

  answered (value: unknown): void {
    this.#observer?.(this.#name, (performance.now() - this.#started) / 1000, false, undefined, this.#waiters)
    this.resolve(value as T)
  }

  failed (error: unknown): void {
    this.#observer?.(this.#name, (performance.now() - this.#started) / 1000, true, undefined, this.#waiters)
    this.reject(errors.storeUnavailable(undefined, { cause: error }))
  }
}

/** A receiver told in the async context it was made in (`RedisContext.#inSendersContext`). */
class InSendersContext extends AsyncResource implements CommandReceiver {
  readonly #receiver: CommandReceiver

  constructor (receiver: CommandReceiver) {
    super('macgate.redis-command')
    this.#receiver = receiver
  }

  answered (value: unknown): void {
    this.runInAsyncScope(this.#receiver.answered, this.#receiver, value)
  }

  failed (error: unknown, command: WrittenCommand): void {
    this.runInAsyncScope(this.#receiver.failed, this.#receiver, error, command)
  }
}

/** One `RedisContext.script` call's receiver: its answer passed on, a NOSCRIPT answered by calling again with the script's text. */
class ScriptCall implements CommandReceiver {
  readonly #redis: Scripted
  readonly #name: ScriptName
  readonly #receiver: ScriptReceiver

  constructor (redis: Scripted, name: ScriptName, receiver: ScriptReceiver) {
    this.#redis = redis
    this.#name = name
    this.#receiver = receiver
  }

  answered (value: unknown): void {
    this.#receiver.answered(value)
  }

  failed (error: unknown, command: WrittenCommand): void {
    if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) return this.#receiver.failed(error)
    // The command's own copy of the arguments (the caller may have reused its arrays by now), less the SHA1.
    this.#redis[this.#name](...command.args.slice(1) as string[]).then((value) => { this.#receiver.answered(value) }, (again: unknown) => { this.#receiver.failed(again) })
  }
}

/**
 * Whatever ioredis rejects with (connection closed, timeout, a failover's MOVED storm) becomes
 * the store-outage error, which every endpoint answers with 503: callers never see ioredis's own.
 */
export async function orUnavailable<T> (sent: Promise<T>): Promise<T> {
  try {
    return await sent
  } catch (error) {
    throw errors.storeUnavailable(undefined, { cause: error })
  }
}

export function parse<T> (value: string | null): T | undefined {
  return value === null ? undefined : JSON.parse(value) as T
}
