// The access line written as pino writes it, from the parts pino has already serialised: one per
// request, it is the gateway's busiest log call.
import { tracingChannel } from 'node:diagnostics_channel'
import pino from 'pino'
import { LogDestination } from './log-destination.ts'

// msgPrefixSym is in pino's symbols at run time, not in its types.
const {
  chindingsSym, endSym, formattersSym, hooksSym, lsCacheSym, messageKeySym, mixinSym, msgPrefixSym,
  needsMetadataGsym, nestedKeySym, serializersSym, streamSym, stringifiersSym, timeSym
} = pino.symbols as typeof pino.symbols & { readonly msgPrefixSym: unique symbol }

/** The fields of one access line, in the order they are written; absent ones are left out. */
export const ACCESS_FIELDS = ['method', 'path', 'status', 'ms', 'ip', 'client', 'reason', 'trace_id', 'span_id'] as const

/**
 * Writes one access line: method, path, status, ms, ip, then client, reason, trace_id, span_id when
 * given, and the message `request`, at `info`.
 */
export type AccessLineWriter = (method: string, path: string, status: number, ms: number, ip: string | undefined,
  client: string | undefined, reason: string | undefined, traceId: string | undefined, spanId: string | undefined) => void

/** What of a pino logger the line is built from: its public methods, and its parts by pino.symbols (its documented door for integrations). */
interface Pino {
  levels: { values: Record<string, number> }
  isLevelEnabled: (level: string) => boolean
  info: (fields: object, message: string) => void
}
type Stream = { write: (line: string) => unknown } & Record<symbol, unknown>

/** A logger's part under one of pino's symbols. */
function part<T> (logger: Pino, symbol: symbol): T {
  return (logger as unknown as Record<symbol, T>)[symbol]!
}

// Who watches pino's serialisation (an instrumentation may): then every line goes through pino.
const pinoSerialisation = tracingChannel('pino_asJson')

/**
 * The line pino's `info(fields, 'request')` writes, byte for byte, built from the parts pino made
 * once (the level's text, the bindings, the end) and the fields' JSON written in place: pino's own
 * serialisation stringifies each key and concatenates field by field, about 1.8 KB of garbage a
 * line. Into macgate's own destination (log-destination.ts) the parts go one by one, written in
 * place in its chunk: no string of the whole line is made (about 100 heap bytes a line, where the
 * line as one string and its Buffer made about 900). Where the logger's options change what pino would write (a log formatter, a mixin,
 * redaction, a nested key, a message prefix, hooks, serializers for these fields, a stream that
 * wants each line's metadata), or it is not a pino logger, or someone watches pino's
 * serialisation, each line is pino's own `info`.
 */
export function accessLineWriter (log: unknown): AccessLineWriter {
  const logger = log as Pino
  const info = (method: string, path: string, status: number, ms: number, ip: string | undefined, client: string | undefined, reason: string | undefined, traceId: string | undefined, spanId: string | undefined): void => {
    logger.info({ method, path, status, ms, ip, client, reason, trace_id: traceId, span_id: spanId }, 'request')
  }
  if (!writesPlainLines(logger)) return info
  const level = logger.levels.values.info!
  const start = part<Record<number, string>>(logger, lsCacheSym)[level]!
  const end = part<string>(logger, endSym)
  const message = `,"${inQuotes(part<string>(logger, messageKeySym))}":"request"`
  return (method, path, status, ms, ip, client, reason, traceId, spanId) => {
    if (!logger.isLevelEnabled('info')) return
    if (pinoSerialisation.hasSubscribers) return info(method, path, status, ms, ip, client, reason, traceId, spanId)
    // Read at each line, as pino reads them: the stream, a child's bindings, the clock.
    const stream = part<Stream>(logger, streamSym)
    // macgate's own destination takes the parts in place; any other stream the line as one string.
    const sink = stream instanceof LogDestination ? stream : joined
    sink.put(start)
    sink.put(part<() => string>(logger, timeSym)())
    sink.put(part<string>(logger, chindingsSym))
    sink.put(',"method":"')
    sink.put(inQuotes(method))
    sink.put('","path":"')
    sink.put(inQuotes(path))
    sink.put('","status":')
    sink.put(number(status))
    sink.put(',"ms":')
    milliseconds(sink, ms)
    optional(sink, ',"ip":"', ip)
    optional(sink, ',"client":"', client)
    optional(sink, ',"reason":"', reason)
    optional(sink, ',"trace_id":"', traceId)
    optional(sink, ',"span_id":"', spanId)
    sink.put(message)
    sink.put(end)
    if (sink === joined) stream.write(joined.take())
  }
}

/** A line's parts joined into one string, for a stream that takes a line whole. One at a time: a line is built in one synchronous call. */
class Joined {
  #text = ''

  put (text: string): void {
    this.#text += text
  }

  take (): string {
    const text = this.#text
    this.#text = ''
    return text
  }
}

const joined = new Joined()

function writesPlainLines (logger: Pino): boolean {
  const stream = part<Stream | undefined>(logger, streamSym)
  if (typeof part(logger, lsCacheSym) !== 'object' || typeof part(logger, timeSym) !== 'function' || typeof stream?.write !== 'function') return false
  const serializers = part<Record<string, unknown>>(logger, serializersSym)
  const stringifiers = part<object>(logger, stringifiersSym)
  const hooks = part<{ logMethod?: unknown, streamWrite?: unknown }>(logger, hooksSym)
  return part<{ log?: unknown }>(logger, formattersSym).log === undefined && part(logger, mixinSym) === undefined &&
    (part(logger, nestedKeySym) ?? null) === null && part(logger, msgPrefixSym) === undefined &&
    hooks.logMethod === undefined && hooks.streamWrite === undefined &&
    Reflect.ownKeys(stringifiers).length === 0 && stream[needsMetadataGsym] !== true &&
    ACCESS_FIELDS.every((field) => serializers[field] === undefined)
}

/** A field written only when given: its key (with the opening quote), its text, the closing quote. */
function optional (sink: Joined | LogDestination, key: string, value: string | undefined): void {
  if (value === undefined) return
  sink.put(key)
  sink.put(inQuotes(value))
  sink.put('"')
}

/** pino writes a number that is not finite as null. */
function number (value: number): string {
  return Number.isFinite(value) ? String(value) : 'null'
}

/** After the whole milliseconds, each hundredth's text as JSON writes it: '' for none, '.1' for ten, '.05' for five. */
const HUNDREDTHS = Array.from({ length: 100 }, (_, cents) => cents === 0 ? '' : `.${String(cents).padStart(2, '0').replace(/0$/, '')}`)

/**
 * The latency as JSON writes it. The access log rounds it to hundredths (access-log.ts): written
 * from their integer, the whole milliseconds (a small integer's text, which V8 caches) and the
 * hundredths (a table), where a double's shortest text is V8's slower path (0.8 µs a line in the
 * gateway's profile). Any other value as `number` writes it.
 */
function milliseconds (sink: Joined | LogDestination, ms: number): void {
  const hundredths = Math.round(ms * 100)
  if (hundredths / 100 !== ms || hundredths < 0 || hundredths > Number.MAX_SAFE_INTEGER) {
    sink.put(number(ms))
    return
  }
  const cents = hundredths % 100
  sink.put(String((hundredths - cents) / 100))
  sink.put(HUNDREDTHS[cents]!)
}

/** What a JSON string encloses: the text itself when nothing in it needs escaping (the usual case, no copy), else JSON.stringify's. */
function inQuotes (text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(text).slice(1, -1)
  }
  return text
}
