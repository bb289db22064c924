import pino from 'pino'

/**
 * Where `macgate start` writes its log (standard output, or a file): buffered into writes of
 * 4 KiB instead of one write per line, flushed each second so a quiet gateway's lines still come,
 * and at exit so that none is lost on a shutdown.
 *
 * Each line goes in as a Buffer, sonic-boom in its buffer mode: in its text mode it measures its
 * whole pending text (`Buffer.byteLength` of one growing string) on every line, which copies up
 * to the 4 KiB buffered so far per line: 4-8 KB of garbage per access line where buffer mode, a
 * list of Buffers joined at write time, makes about 0.1 (`npm run bench -- --ladder`, rung L6).
 */
export function logDestination (dest: number | string = 1): pino.DestinationStream {
  const destination = pino.destination({ dest, sync: false, minLength: 4096, contentMode: 'buffer' })
  const timer = setInterval(() => { destination.flush() }, 1000).unref()
  process.once('exit', () => {
    clearInterval(timer)
    try {
      destination.flushSync()
    } catch {}
  })
  // sonic-boom's types know only its text mode's write(string).
  const writeBuffer = destination.write.bind(destination) as unknown as (line: Buffer) => boolean
  return { write: (line: string) => writeBuffer(Buffer.from(line, 'utf8')) }
}
