// One structured line per request at the default level, instead of Fastify's two and the proxy
// client's two: what an operator needs per request; anything more comes from the metrics.
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { pathAndQuery, type AuditEvents } from '../../plugin/index.ts'
import { accessLineWriter } from './access-line.ts'

/** Lines for refused requests without a verified caller, per second; the rest is counted. */
export const REFUSAL_LINES_PER_SECOND = 20

/**
 * Bounds the lines that anyone can cause: refusals of requests no verified client made. Up to
 * `perSecond` are written each second; past that they are only counted, by reason, and one line a
 * second says how many were left out, so that a flood of forged requests costs the disk about
 * `perSecond + 1` lines a second, not one per request.
 */
export class RefusalLogLimiter {
  readonly #perSecond: number
  readonly #log: FastifyBaseLogger
  #written = 0
  #suppressed = new Map<string, number>()
  #timer: NodeJS.Timeout | undefined

  constructor (log: FastifyBaseLogger, perSecond = REFUSAL_LINES_PER_SECOND) {
    this.#log = log
    this.#perSecond = perSecond
  }

  /** True when this refusal's line may be written now; otherwise it is counted under `reason`. */
  admit (reason: string): boolean {
    this.#timer ??= setTimeout(() => this.#flush(), 1000).unref()
    if (this.#written < this.#perSecond) {
      this.#written++
      return true
    }
    // Reasons are a short fixed list; the cap only keeps the summary small whatever comes.
    const key = this.#suppressed.has(reason) || this.#suppressed.size < 32 ? reason : 'other'
    this.#suppressed.set(key, (this.#suppressed.get(key) ?? 0) + 1)
    return false
  }

  /** Ends the window: the summary of what was left out, if anything was. */
  #flush (): void {
    this.#timer = undefined
    this.#written = 0
    if (this.#suppressed.size === 0) return
    const reasons = Object.fromEntries(this.#suppressed)
    const count = [...this.#suppressed.values()].reduce((total, n) => total + n, 0)
    this.#suppressed = new Map()
    this.#log.info({ suppressed: count, reasons }, 'refused requests not logged one by one')
  }

  close (): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    this.#flush()
  }
}

/** The request's trace and span ids while its span is sampled (tracing/gateway-tracing.ts); absent when tracing is off. */
export type TraceIdsOf = (request: FastifyRequest) => { traceId: string, spanId: string } | undefined

/**
 * Logs method, path (never the query: codes and secrets travel there), status, latency, the
 * caller's address, the verified client and, for a refused request, why. Written through the root logger, so that a
 * route whose own level is quieter (the proxy's) still gets its line. Refusals of unverified
 * requests go through a `RefusalLogLimiter`. A callback hook (an async one would cost a promise per
 * request) handing the fields to `accessLineWriter` (access-line.ts): no object made per line.
 */
export function registerAccessLog (app: FastifyInstance, refusalsPerSecond = REFUSAL_LINES_PER_SECOND, traceIdsOf?: TraceIdsOf): void {
  const log = app.log
  const limiter = new RefusalLogLimiter(log, refusalsPerSecond)
  app.addHook('onClose', async () => { limiter.close() })
  const write = accessLineWriter(log)
  app.addHook('onResponse', function logAccess (request: FastifyRequest, reply: FastifyReply, done: () => void) {
    const identity = request.macIdentity
    const reason = request.macRejection
    const status = reply.statusCode
    if (identity === null && status >= 400 && !limiter.admit(reason ?? String(status))) return done()
    const ids = traceIdsOf?.(request)
    write(request.method, pathAndQuery(request).path, status, Math.round(reply.elapsedTime * 100) / 100, request.ip,
      identity?.clientId, reason ?? undefined, ids?.traceId, ids?.spanId)
    done()
  })
}

/** An audit trail as log lines: `{"audit":{"type":"grant.issued",...}}`; events carry no secrets. */
export function logAuditEvents (events: AuditEvents, log: FastifyBaseLogger): void {
  events.on('audit', (event) => { log.info({ audit: event }, event.type) })
}
