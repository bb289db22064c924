import pino from 'pino'

/**
 * Where `macgate start` writes its log (standard output, or a file): buffered into writes of
 * 4 KiB instead of one write per line, flushed each second so a quiet gateway's lines still come,
 * and at exit so that none is lost on a shutdown.
 */
export function logDestination (dest: number | string = 1): pino.DestinationStream {
  const destination = pino.destination({ dest, sync: false, minLength: 4096 })
  const timer = setInterval(() => { destination.flush() }, 1000).unref()
  process.once('exit', () => {
    clearInterval(timer)
    try {
      destination.flushSync()
    } catch {}
  })
  return destination
}
