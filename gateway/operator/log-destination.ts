import pino from 'pino'

/**
 * Bytes a chunk holds before it goes to the file: 64 KiB, about 350 access lines a write. Each
 * write is an `fs.write` on libuv's thread pool and a wake-up of the loop when it is done: with
 * chunks of 4 KiB (22 lines) the main thread's profile under load showed 6 µs a request inside
 * those calls (the ladder's access-log rung, pinned to one core with the pool's threads), and 0.09
 * write system calls a request, now 0.006.
 * A quiet gateway's lines still go within a second (the timer below), whatever the size.
 */
const CHUNK_BYTES = 64 * 1024

/** UTF-8 bytes a UTF-16 code unit can take at most (a surrogate pair: 4 bytes for two units). */
const MOST_BYTES_A_UNIT = 3

/**
 * Where `macgate start` writes its log (standard output, or a file): lines written in place into a
 * 64 KiB chunk, handed to sonic-boom (in its buffer mode, which writes each at once) when the next
 * piece would not fit, and at the latest each second, so that a quiet gateway's lines still come;
 * at exit, synchronously, so that none is lost on a shutdown. A line may span two chunks: they are
 * written in order, and nothing hands a chunk over in the middle of a line (lines are written in
 * one synchronous call, the timer and the exit between them).
 *
 * Written in place, not one Buffer per line: `Buffer.from(line)` made a Buffer object and a flat
 * copy of the line (a template's string is a tree of its parts) on every line, about 300 heap
 * bytes; the access line (access-line.ts) goes further and `put`s its parts one by one, so that no
 * string of the whole line is made at all (`npm run bench -- --parts`). sonic-boom's own text mode
 * was no better: it takes `Buffer.byteLength` of its whole pending text on every line.
 */
export class LogDestination {
  readonly #sink: ReturnType<typeof pino.destination>
  #chunk = Buffer.allocUnsafe(CHUNK_BYTES)
  #used = 0

  constructor (dest: number | string) {
    this.#sink = pino.destination({ dest, sync: false, minLength: 0, contentMode: 'buffer' })
  }

  /** pino's stream interface: one whole line. */
  write (line: string): boolean {
    this.put(line)
    return true
  }

  /** A part of a line, written in place. */
  put (text: string): void {
    if (text.length * MOST_BYTES_A_UNIT > CHUNK_BYTES - this.#used) {
      this.#handOver()
      // Longer than any chunk could be sure to hold (a stack trace): a Buffer of its own, in its turn.
      if (text.length * MOST_BYTES_A_UNIT > CHUNK_BYTES) {
        this.#sinkWrite(Buffer.from(text, 'utf8'))
        return
      }
    }
    this.#used += this.#chunk.write(text, this.#used)
  }

  /** What is written so far, handed to sonic-boom now, which writes it asynchronously (pino's `logger.flush` calls this). */
  flush (done?: (error?: Error) => void): void {
    this.#handOver()
    this.#sink.flush(done)
  }

  /** What is written so far, to the file before this returns (at exit). */
  flushSync (): void {
    this.#handOver()
    this.#sink.flushSync()
  }

  /** The chunk's written part to sonic-boom, which keeps it until written; a new chunk from here. */
  #handOver (): void {
    if (this.#used === 0) return
    this.#sinkWrite(this.#chunk.subarray(0, this.#used))
    this.#chunk = Buffer.allocUnsafe(CHUNK_BYTES)
    this.#used = 0
  }

  #sinkWrite (bytes: Buffer): void {
    // sonic-boom's types know only its text mode's write(string).
    (this.#sink.write as unknown as (bytes: Buffer) => boolean).call(this.#sink, bytes)
  }
}

/** The log's destination, flushed each second and at exit (see LogDestination). */
export function logDestination (dest: number | string = 1): LogDestination {
  const destination = new LogDestination(dest)
  const timer = setInterval(() => { destination.flush() }, 1000).unref()
  process.once('exit', () => {
    clearInterval(timer)
    try {
      destination.flushSync()
    } catch {}
  })
  return destination
}
