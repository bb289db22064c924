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

/**
 * A command whose wire bytes (RESP) are written once, into one buffer, when it is made. ioredis's
 * own `toWritable` joins five strings for each argument, and the socket then copies the joined
 * text into a flat string of its own: some 160 heap bytes an argument, which a nonce batch (a key
 * per nonce) and a turn's token reads (a key per miss) pay for every request they carry. The
 * arguments stay on the command as ioredis keeps them (a cluster routes by its keys), and a resend
 * (a cluster's redirection) writes the same bytes.
 */
export class WrittenCommand extends Command implements Deadlined {
  readonly #bytes: Buffer
  /** What watches its command timeout, once ioredis has set one. */
  #deadlines: CommandDeadlines | undefined
  deadline = 0

  /** `replyEncoding`: bulk replies as strings of it (else Buffers), as ioredis's command methods give them. */
  constructor (name: string, args: readonly CommandArgument[], replyEncoding?: BufferEncoding) {
    super(name, args as Array<string | number | string[]>, { replyEncoding })
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
        this.#deadlines?.settled(this)
      }
    })
  }
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
