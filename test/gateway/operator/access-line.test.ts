// The access line built from pino's parts is the line pino's own `info` writes, byte for byte, under
// every logger option that leaves the line alone; under any that changes it, it is pino's own.
import { tracingChannel } from 'node:diagnostics_channel'
import t from 'tap'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino, { type LoggerOptions } from 'pino'
import { accessLineWriter } from '../../../gateway/operator/access-line.ts'
import { LogDestination } from '../../../gateway/operator/log-destination.ts'

type Fields = Parameters<ReturnType<typeof accessLineWriter>>

/** pino writes to anything with `write`, at once: each line as it was handed over. */
function capture (): { stream: pino.DestinationStream, lines: string[] } {
  const lines: string[] = []
  return { stream: { write: (line: string) => { lines.push(line) } }, lines }
}

/**
 * The same fields through pino's `info` and through the writer, each into its own logger with
 * `options`; `byPino` says whether the writer handed its line to pino's `info`.
 */
function both (options: LoggerOptions, fields: Fields): { pino: string[], ours: string[], byPino: boolean } {
  const theirs = capture()
  const mine = capture()
  const [method, path, status, ms, ip, client, reason, traceId, spanId] = fields
  pino(options, theirs.stream).info({ method, path, status, ms, ip, client, reason, trace_id: traceId, span_id: spanId }, 'request')
  const logger = pino(options, mine.stream)
  let byPino = false
  const info = logger.info.bind(logger)
  logger.info = ((...args: Parameters<typeof info>) => { byPino = true; info(...args) }) as typeof logger.info
  accessLineWriter(logger)(...fields)
  return { pino: theirs.lines, ours: mine.lines, byPino }
}

const time = (): string => ',"time":1764000000000'
const FIELDS: Fields[] = [
  ['GET', '/user/profile', 200, 1.23, '127.0.0.1', '2882303761517520000', undefined, undefined, undefined],
  ['POST', '/a/"quoted"/back\\slash', 401, 0.5, '::1', undefined, 'mac does not match', undefined, undefined],
  ['GET', '/control\u0001char/\u{1F600}/' + 'long'.repeat(40), 502, 12, '10.0.0.1', 'c', 'upstream refused', '0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331'],
  ['DELETE', '/', 204, Number.NaN, undefined, undefined, undefined, undefined, undefined]
]

t.test('byte for byte pino\'s line, under the options that leave it alone', async (t) => {
  const optionSets: Array<[string, LoggerOptions]> = [
    ['defaults (pid, hostname, the clock)', {}],
    ['a fixed clock', { timestamp: time }],
    ['no base, ISO time', { base: null, timestamp: pino.stdTimeFunctions.isoTime }],
    ['a level formatter and bindings', { timestamp: time, base: { service: 'gw' }, formatters: { level: (label) => ({ severity: label }), bindings: (b) => ({ host: b.hostname }) } }],
    ['CRLF, another message key, custom levels', { timestamp: time, crlf: true, messageKey: 'message', customLevels: { notice: 35 } }],
    ['serializers for other keys (Fastify\'s)', { timestamp: time, serializers: { req: () => 'r', err: pino.stdSerializers.err } }]
  ]
  for (const [name, options] of optionSets) {
    for (const fields of FIELDS) {
      const { pino: expected, ours, byPino } = both(options, fields)
      t.equal(byPino, false, `${name}: built from pino's parts, not by pino's info`)
      if (options.timestamp === undefined || options.timestamp === pino.stdTimeFunctions.isoTime) {
        // The clock moved between the two lines: compare all but the time.
        const strip = (line: string): string => line.replace(/,"time":("[^"]*"|\d+)/, '')
        t.same(ours.map(strip), expected.map(strip), `${name}: ${fields[1].slice(0, 20)}`)
      } else {
        t.same(ours, expected, `${name}: ${fields[1].slice(0, 20)}`)
      }
      t.doesNotThrow(() => JSON.parse(ours[0]!), 'a JSON line')
    }
  }
})

t.test('into macgate\'s own destination, in parts: the same bytes as pino\'s line, and no whole line handed over', async (t) => {
  const directory = await mkdtemp(join(tmpdir(), 'macgate-access-line-'))
  t.teardown(async () => { await rm(directory, { recursive: true, force: true }) })
  const file = join(directory, 'access.log')
  const destination = new LogDestination(file)
  let wholeLines = 0
  const write = destination.write.bind(destination)
  destination.write = (line: string) => { wholeLines++; return write(line) }
  const options: LoggerOptions = { timestamp: time, base: { service: 'gw' } }
  const logger = pino(options, destination)
  const expected: string[] = []
  const theirs = pino(options, { write: (line: string) => { expected.push(line) } })
  const writer = accessLineWriter(logger)
  for (let round = 0; round < 40; round++) {
    for (const fields of FIELDS) {
      writer(...fields)
      const [method, path, status, ms, ip, client, reason, traceId, spanId] = fields
      theirs.info({ method, path, status, ms, ip, client, reason, trace_id: traceId, span_id: spanId }, 'request')
    }
  }
  t.equal(wholeLines, 0, 'every part put in place')
  logger.warn('another line, whole, between them')
  theirs.warn('another line, whole, between them')
  t.equal(wholeLines, 1, 'pino\'s own lines are handed over whole')
  await new Promise((resolve) => setTimeout(resolve, 50)) // sonic-boom opens the file in the background
  destination.flushSync()
  const got = await readFile(file, 'utf8')
  t.equal(got.length, expected.join('').length, `${expected.length} lines, across the destination's chunks`)
  t.ok(got === expected.join(''), 'byte for byte pino\'s lines, in order')
})

t.test('the latency, written from its hundredths, is the number pino writes', async (t) => {
  const latencies = [0, 0.01, 0.05, 0.1, 0.5, 0.99, 1, 1.07, 1.1, 9.99, 10, 100.01, 1234.5, 65_535.99, 2 ** 40 + 0.25, 1.2345, 1e-7, 1e21, Number.POSITIVE_INFINITY, -0]
  for (let hundredths = 0; hundredths < 30_000; hundredths += 7) latencies.push(Math.round(hundredths) / 100)
  let differ = 0
  for (const ms of latencies) {
    const { pino: expected, ours } = both({ timestamp: time }, ['GET', '/', 200, ms, undefined, undefined, undefined, undefined, undefined])
    if (ours[0] !== expected[0]) {
      differ++
      t.equal(ours[0], expected[0], `ms ${ms}`)
    }
  }
  t.equal(differ, 0, `${latencies.length} latencies, each as pino writes it`)
})

t.test('options that change the line: pino writes it', async (t) => {
  const changing: Array<[string, LoggerOptions]> = [
    ['redaction', { timestamp: time, redact: ['client'] }],
    ['a log formatter', { timestamp: time, formatters: { log: (o) => ({ ...o, extra: 1 }) } }],
    ['a mixin', { timestamp: time, mixin: () => ({ tenant: 't' }) }],
    ['a nested key', { timestamp: time, nestedKey: 'payload' }],
    ['a message prefix', { timestamp: time, msgPrefix: '[gw] ' }],
    ['a logMethod hook', { timestamp: time, hooks: { logMethod (args, method) { method.apply(this, args) } } }],
    ['a streamWrite hook', { timestamp: time, hooks: { streamWrite: (line) => line.replace('request', 'REQUEST') } }],
    ['a serializer of a field', { timestamp: time, serializers: { path: () => '[path]' } }]
  ]
  for (const [name, options] of changing) {
    const { pino: expected, ours, byPino } = both(options, FIELDS[0]!)
    t.same(ours, expected, name)
    t.equal(byPino, true, `${name}: pino's own info`)
  }
})

t.test('below info nothing is written; someone watching pino\'s serialisation gets every line through pino', async (t) => {
  const { stream, lines } = capture()
  const logger = pino({ level: 'warn', timestamp: time }, stream)
  const write = accessLineWriter(logger)
  write(...FIELDS[0]!)
  t.same(lines, [], 'level warn: no line')
  logger.level = 'info'
  write(...FIELDS[0]!)
  t.equal(lines.length, 1, 'the level is read at each line')

  const watched: unknown[] = []
  const channel = tracingChannel('pino_asJson')
  const handlers = { start: (message: unknown) => { watched.push(message) }, end () {}, asyncStart () {}, asyncEnd () {}, error () {} }
  channel.subscribe(handlers)
  t.teardown(() => { channel.unsubscribe(handlers) })
  write(...FIELDS[0]!)
  t.equal(watched.length, 1, 'pino serialised it, and its watcher saw it')
  t.equal(lines.length, 2)
  t.same(JSON.parse(lines[1]!), JSON.parse(lines[0]!), 'the same line either way')
})

t.test('not a pino logger: its info is called with the fields', async (t) => {
  const calls: unknown[][] = []
  const write = accessLineWriter({ info: (...args: unknown[]) => { calls.push(args) } })
  write(...FIELDS[1]!)
  t.same(calls, [[{ method: 'POST', path: '/a/"quoted"/back\\slash', status: 401, ms: 0.5, ip: '::1', client: undefined, reason: 'mac does not match', trace_id: undefined, span_id: undefined }, 'request']])
})
