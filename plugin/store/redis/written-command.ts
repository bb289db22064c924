import { Command } from 'ioredis'
import { CommandDeadlines, type Deadlined } from './command-deadlines.ts'
import { decimalWidth, writeDecimal } from './decimal.ts'

/** A command's arguments: ioredis flattens one level of arrays (a script's keys) and writes numbers as `String` does. */
export type CommandArgument = string | number | readonly string[]

/** One watch for each command timeout in use (a store's `commandTimeout`: one or a few). */
const deadlines = new Map<number, CommandDeadlines>()

function deadlinesOf (ms: number): CommandDeadlines {
  let watch = deadlines.get(ms)
  if (watch === undefined) deadlines.set(ms, watch = new CommandDeadlines(ms))
  return watch
}

/** Where a command's answer goes: methods, so that a command makes no promise or callback for it. */
export interface CommandReceiver {
  /** The reply, as ioredis transforms it (bulk replies as strings of the command's `replyEncoding`). */
  answered: (value: unknown) => void
  /** `command`: the one that failed, whose arguments a retry may send again. */
  failed: (error: unknown, command: WrittenCommand) => void
}

/**
 * A command whose wire bytes (RESP) are written once, into one buffer, when it is made. ioredis's
 * own `toWritable` joins five strings for each argument, and the socket then copies the joined
 * text into a flat string of its own: some 160 heap bytes an argument, which a nonce batch (a key
 * per nonce) and a turn's token reads (a key per miss) pay for every request they carry. The
 * arguments stay on the command as ioredis keeps them (a cluster routes by its keys), and a resend
 * (a cluster's redirection) writes the same bytes.
 *
 * Its answer goes to a receiver, not through a promise: ioredis settles a command by calling its
 * `resolve` or `reject` (its reply handler, its connection's loss, a cluster's redirection, the
 * command timeout), and its own command makes for that, as it is made, a promise, its two
 * resolving functions and two closures over them; a caller's `then` adds a promise and two more.
 * About 800 heap bytes and a microtask a command (a batch of one nonce: 5,842 bytes before, 5,052
 * after), which every event-loop turn of a busy gateway pays for its nonce batch
 * (bench/HISTORY.md). It has no `promise`, so ioredis's `sendCommand`
 * gives back undefined for it (ioredis's own tracing channel, which macgate does not subscribe
 * to, would see it end as it is sent).
 */
export class WrittenCommand extends Command implements Deadlined {
  readonly #bytes: Buffer
  readonly #receiver: CommandReceiver
  /** What watches its command timeout, once ioredis has set one. */
  #deadlines: CommandDeadlines | undefined

  /** `replyEncoding`: bulk replies as strings of it (else Buffers), as ioredis's command methods give them. */
  constructor (name: string, args: readonly CommandArgument[], receiver: CommandReceiver, replyEncoding?: BufferEncoding) {
    super(name, args as Array<string | number | string[]>, { replyEncoding })
    this.#receiver = receiver
    this.#bytes = encode(name, this.args as string[])
  }

  override toWritable (): Buffer {
    return this.#bytes
  }

  /**
   * ioredis's command timeout (its `commandTimeout` option), as ioredis sets it: the command fails
   * unless settled by then; its first setting holds, as ioredis's own. Watched with the other
   * commands of the same timeout under one timer (command-deadlines.ts), not a timer of its own.
   */
  override setTimeout (ms: number): void {
    if (this.#deadlines !== undefined) return
    this.#deadlines = deadlinesOf(ms)
    this.#deadlines.watch(this)
  }

  timedOut (): void {
    if (!this.isSettled) this.reject(new Error('Command timed out'))
  }

  static {
    // ioredis calls `_clearTimers` as a command settles. Its own `delete`s its timer's property,
    // which turns every command into a dictionary-mode object (some 800 heap bytes a command); this
    // one tells the watch, which lets the command go. (Private in ioredis's types, hence set here;
    // its other timer is for blocking commands, which none of these is.)
    Object.defineProperty(WrittenCommand.prototype, '_clearTimers', {
      value (this: WrittenCommand): void {
        this.#clearTimers()
      }
    })
    // In place of ioredis's promise (above): `initPromise`, which its constructor calls, prepares
    // the arguments as ioredis's does and makes nothing; `resolve` and `reject` are methods that
    // settle the command as ioredis's closures do, once, and hand the outcome to the receiver. (Set here:
    // ioredis's types have `initPromise` private and the other two as properties.)
    Object.defineProperties(WrittenCommand.prototype, {
      initPromise: {
        value (this: WrittenCommand): void {
          this.isResolved = false
          this.isSettled = false
          const hidden = this as unknown as Hidden
          if (hidden.transformed) return
          hidden.transformed = true
          const transformer = (Command as unknown as ArgumentTransformers)._transformer.argument[this.name]
          if (transformer !== undefined) this.args = transformer(this.args)
          hidden.stringifyArguments()
        }
      },
      // Writable, as ioredis's own properties are: a cluster wraps a command's `reject` with its redirections.
      resolve: {
        writable: true,
        value (this: WrittenCommand, value: unknown): void {
          // Settled once, as a promise is: a reply after the command timed out goes nowhere.
          if (this.isSettled) return
          let answer: unknown
          try {
            this.#clearTimers()
            answer = (this as unknown as Hidden).transformReply(value)
            this.isResolved = true
            this.isSettled = true
          } catch (error) {
            this.reject(error as Error)
            return
          }
          try {
            this.#receiver.answered(answer)
          } catch (error) {
            thrownLater(error)
          }
        }
      },
      reject: {
        writable: true,
        value (this: WrittenCommand, error: unknown): void {
          if (this.isSettled) return
          this.#clearTimers()
          this.isSettled = true
          try {
            this.#receiver.failed(error, this)
          } catch (thrown) {
            thrownLater(thrown)
          }
        }
      }
    })
  }

  /** ioredis's `_clearTimers`, as set above. */
  #clearTimers (): void {
    this.#deadlines?.settled(this)
  }
}

/**
 * A receiver's throw, thrown in a microtask of its own, as an unhandled rejection of the promise
 * would have been: never into ioredis, whose reply handler (or connection's close) is the caller.
 */
function thrownLater (error: unknown): void {
  queueMicrotask(() => { throw error })
}

/** What `initPromise` and `resolve` reach of ioredis's command that its types keep private. */
interface Hidden {
  transformed: boolean
  stringifyArguments: () => void
  transformReply: (value: unknown) => unknown
}

/** ioredis's table of argument transformers by command name (`Command.setArgumentTransformer`). */
interface ArgumentTransformers {
  _transformer: { argument: Record<string, ((args: WrittenCommand['args']) => WrittenCommand['args']) | undefined> }
}

/** `*<count>\r\n` then `$<bytes>\r\n<text>\r\n` for the name and each argument (all strings by now: ioredis stringified them). */
function encode (name: string, args: string[]): Buffer {
  // Two passes over the sizes (each `byteLength` is a count, no copy) rather than an array of them.
  let length = 1 + decimalWidth(args.length + 1) + 2 + bulkLength(Buffer.byteLength(name))
  for (const arg of args) length += bulkLength(Buffer.byteLength(arg))
  const bytes = Buffer.allocUnsafe(length)
  bytes[0] = 0x2a // '*'
  let at = writeDecimal(bytes, 1, args.length + 1)
  bytes[at++] = 0x0d
  bytes[at++] = 0x0a
  at = writeBulk(bytes, at, name)
  for (const arg of args) at = writeBulk(bytes, at, arg)
  return bytes
}

/** The bytes of one bulk string of `size` bytes: `$`, its size, CRLF, itself, CRLF. */
function bulkLength (size: number): number {
  return 1 + decimalWidth(size) + 2 + size + 2
}

function writeBulk (bytes: Buffer, at: number, text: string): number {
  bytes[at++] = 0x24 // '$'
  at = writeDecimal(bytes, at, Buffer.byteLength(text))
  bytes[at++] = 0x0d
  bytes[at++] = 0x0a
  at += bytes.write(text, at, 'utf8')
  bytes[at++] = 0x0d
  bytes[at++] = 0x0a
  return at
}
