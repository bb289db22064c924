// One upstream service: its instances, each with its own undici Pool, balanced round robin with a
// passive health check, and a bound on the requests waiting for it.
import type { IncomingMessage } from 'node:http'
import { Pool, type Dispatcher } from 'undici'
import type { UpstreamPoolSettings } from '../../config/gateway-config.ts'
import { answerFor, causeOf, countsAgainstInstance, failedBeforeSending, type FailureCause, CAUSES } from './failure.ts'
import type { FailureLog } from './failure-log.ts'
import { signalOf } from './caller-signal.ts'

/** A request as reply-from hands it to its dispatcher, with the fields the upstream sets. */
export type UpstreamRequest = Dispatcher.RequestOptions & { origin?: string, signal?: unknown }
export type ResponseCallback = (error: Error | null, data?: Dispatcher.ResponseData) => void

/**
 * Each instance's keep-alive pool: one request at a time per connection, idle ones kept a minute
 * (every pool below), and `connections` the config's default (config/gateway-config.ts,
 * `upstreamPool`). The benchmark's baseline proxy uses the same.
 */
export const UPSTREAM_POOL = { connections: 128, pipelining: 1, keepAliveTimeout: 60_000 }

/** Errors of a GET or HEAD that never reached an instance while another could take it (see retryable). */
const retryable = new WeakSet<Error>()

/** True for a failure another instance may be asked to redo once: nothing was sent, no body to send. */
export function isRetryable (error: unknown): boolean {
  return error instanceof Error && retryable.has(error)
}

class Instance {
  /** Its URL's origin (or the socket path): the instance's name in logs and metrics. */
  readonly name: string
  readonly origin: string
  readonly pool: Pool
  /** The URL's path, prepended to every request's ('' for `/`). */
  readonly prefix: string
  failuresInRow = 0
  /** When it may be tried again (ms); 0 while it is in. */
  ejectedUntil = 0

  constructor (url: string, options: Pool.Options) {
    const parsed = new URL(url)
    const socketPath = parsed.protocol.startsWith('unix+') ? decodeURIComponent(parsed.host) : undefined
    this.origin = socketPath === undefined ? parsed.origin : `${parsed.protocol.slice(5)}//localhost`
    this.name = socketPath ?? parsed.origin
    this.prefix = socketPath !== undefined || parsed.pathname === '/' ? '' : parsed.pathname.replace(/\/$/, '')
    this.pool = new Pool(this.origin, socketPath === undefined ? options : { ...options, socketPath })
  }
}

export interface UpstreamOptions {
  /** The upstream's name in logs and metrics: its URLs as configured. */
  name: string
  urls: string[]
  pool: UpstreamPoolSettings
  /** ms, to open a connection (TCP and TLS). */
  connectMs: number
  log: FailureLog
  now?: () => number
}

/** How long to wait on this route's requests, per request (routes sharing an upstream may differ). */
export interface RouteTimeouts {
  headersMs: number
  bodyIdleMs: number
}

export class Upstream {
  readonly name: string
  /** Counted on the request path as plain integers, read at scrape time (metrics.ts). */
  readonly counts = {
    requests: 0,
    ejections: 0,
    failures: Object.fromEntries(CAUSES.map((cause) => [cause, 0])) as Record<FailureCause, number>
  }

  readonly #instances: Instance[]
  readonly #settings: UpstreamPoolSettings
  readonly #log: FailureLog
  readonly #now: () => number
  /** Requests sent and not yet answered with headers (a pool's queue included): what the bound bounds. */
  #awaiting = 0
  readonly #bound: number
  #next = 0
  /** A retried caller's failed instance, so that the retry goes to another. */
  readonly #failedFor = new WeakMap<object, Instance>()

  constructor ({ name, urls, pool, connectMs, log, now = Date.now }: UpstreamOptions) {
    this.name = name
    this.#settings = pool
    this.#log = log
    this.#now = now
    // Our own pools verify TLS certificates (reply-from's defaults would not).
    const options: Pool.Options = { ...UPSTREAM_POOL, connections: pool.connections, connect: { timeout: connectMs } }
    this.#instances = urls.map((url) => new Instance(url, options))
    this.#bound = pool.connections * this.#instances.length + pool.maxWaiting
  }

  /** Requests waiting for this upstream's answer now (metrics). */
  get awaiting (): number {
    return this.#awaiting
  }

  /** Requests queued in the pools, not yet written to a connection (metrics; reads every client). */
  get queued (): number {
    let queued = 0
    for (const instance of this.#instances) queued += instance.pool.stats.pending
    return queued
  }

  /** Instances skipped now (metrics). */
  get ejected (): number {
    const now = this.#now()
    return this.#instances.filter((instance) => instance.ejectedUntil > now).length
  }

  /**
   * Sends `request` to an instance, its answer (or failure, as an OAuthError) to `done`. Refused at
   * once past the bound (503) or with every instance skipped (502). The caller's signal
   * (caller-signal.ts; proxy.ts aborts it when the caller leaves) cancels the upstream request.
   */
  send (request: UpstreamRequest, caller: IncomingMessage, timeouts: RouteTimeouts, done: ResponseCallback): void {
    this.counts.requests++
    if (this.#awaiting >= this.#bound) {
      this.#refuse('busy', done)
      return
    }
    const avoid = this.#instances.length > 1 ? this.#failedFor.get(caller) : undefined
    const instance = this.#pick(avoid)
    if (instance === undefined) {
      this.#refuse('no_instance', done)
      return
    }
    request.origin = instance.origin
    if (instance.prefix !== '') request.path = instance.prefix + request.path
    request.signal = signalOf(caller)
    request.headersTimeout = timeouts.headersMs
    request.bodyTimeout = timeouts.bodyIdleMs
    this.#awaiting++
    instance.pool.request(request as Dispatcher.RequestOptions, (error, data) => {
      this.#awaiting--
      if (error === null) {
        if (instance.failuresInRow !== 0) instance.failuresInRow = 0
        done(null, data)
        return
      }
      done(this.#failed(instance, error, request, caller))
    })
  }

  /** Round robin over the instances in; one whose cool-down is over is in again (one failure puts it out). */
  #pick (avoid: Instance | undefined): Instance | undefined {
    const instances = this.#instances
    for (let tried = 0; tried < instances.length; tried++) {
      const instance = instances[this.#next]!
      this.#next = this.#next + 1 === instances.length ? 0 : this.#next + 1
      if (instance !== avoid && this.#isIn(instance)) return instance
    }
    return undefined
  }

  #isIn (instance: Instance): boolean {
    if (instance.ejectedUntil === 0) return true
    if (this.#now() < instance.ejectedUntil) return false
    instance.ejectedUntil = 0
    instance.failuresInRow = this.#settings.ejectAfterFailures - 1
    return true
  }

  #refuse (cause: FailureCause, done: ResponseCallback): void {
    this.counts.failures[cause]++
    this.#log.failed(this.name, '-', cause, undefined)
    done(answerFor(cause))
  }

  #failed (instance: Instance, error: Error, request: UpstreamRequest, caller: IncomingMessage): Error {
    const cause = causeOf(error)
    this.counts.failures[cause]++
    this.#log.failed(this.name, instance.name, cause, error)
    if (countsAgainstInstance(cause)) this.#countAgainst(instance)
    const answer = answerFor(cause, error)
    const bodiless = (request.method === 'GET' || request.method === 'HEAD') && (request.body === undefined || request.body === null || request.body === '')
    if (bodiless && failedBeforeSending(cause) && this.#instances.some((other) => other !== instance && this.#isIn(other))) {
      retryable.add(answer)
      this.#failedFor.set(caller, instance)
    }
    return answer
  }

  #countAgainst (instance: Instance): void {
    instance.failuresInRow++
    if (instance.failuresInRow < this.#settings.ejectAfterFailures || instance.ejectedUntil !== 0) return
    instance.ejectedUntil = this.#now() + this.#settings.ejectMs
    this.counts.ejections++
    this.#log.ejected(this.name, instance.name, instance.failuresInRow, this.#settings.ejectMs)
  }

  /** The instances' origins, for the body-timeout watch (upstreams.ts). */
  get origins (): string[] {
    return this.#instances.map((instance) => instance.origin)
  }

  /** Counts a body that stalled after the headers (undici reports it on its diagnostics channel). */
  bodyStalled (origin: string, error: Error): void {
    const instance = this.#instances.find((candidate) => candidate.origin === origin)!
    this.counts.failures.body_timeout++
    this.#log.failed(this.name, instance.name, 'body_timeout', error)
  }

  async close (): Promise<void> {
    await Promise.all(this.#instances.map(async (instance) => await instance.pool.destroy()))
  }
}
