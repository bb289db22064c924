// Every upstream of the config, once each, and the dispatcher reply-from sends through: it finds the
// request's route target (left on its headers by proxy.ts) and hands the request to that upstream.
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import type { IncomingMessage } from 'node:http'
import type { UpstreamPoolSettings, UpstreamTimeouts } from '../../config/gateway-config.ts'
import type { FailureLog } from './failure-log.ts'
import { Upstream, type ResponseCallback, type RouteTimeouts, type UpstreamRequest } from './upstream.ts'

/** Where one route's requests go and how long they may take. */
export interface RouteTarget extends RouteTimeouts {
  upstream: Upstream
}

/** The route target and the caller, on the headers reply-from passes along (a symbol: never sent). */
export const TARGET = Symbol('macgate.upstreamTarget')
export const CALLER = Symbol('macgate.caller')

interface TaggedHeaders {
  [TARGET]?: RouteTarget
  [CALLER]?: IncomingMessage
}

export interface UpstreamSettings {
  timeouts: UpstreamTimeouts
  upstreamPool: UpstreamPoolSettings
  /** The gateway's clock (Unix ms): an instance's cool-down after an ejection runs on it. */
  now: () => number
}

export class Upstreams {
  readonly #byKey = new Map<string, Upstream>()
  readonly #settings: UpstreamSettings
  readonly #log: FailureLog
  readonly #byOrigin = new Map<string, Upstream>()

  /** The upstreams of an earlier config (a reload), whose services this one takes over where they are unchanged. */
  readonly #previous: Upstreams | undefined
  readonly #adopted = new Set<Upstream>()

  constructor (settings: UpstreamSettings, log: FailureLog, previous?: Upstreams) {
    this.#settings = settings
    this.#log = log
    // Pools are kept across a reload only when their settings are the same: their connections,
    // health state and counts go on; a changed pool setting makes every upstream anew.
    if (previous !== undefined && JSON.stringify(previous.#settings.upstreamPool) === JSON.stringify(settings.upstreamPool)) this.#previous = previous
  }

  /** The target of a route with `upstream` (its own, else the default) and its own timeouts, if any. */
  target (upstream: string | string[], timeouts: Partial<UpstreamTimeouts> = {}): RouteTarget {
    const { connectMs, headersMs, bodyIdleMs } = { ...this.#settings.timeouts, ...timeouts }
    const urls = typeof upstream === 'string' ? [upstream] : upstream
    const name = urls.join(',')
    // Routes naming the same upstream share its pools; a connect timeout of its own is a pool of its own.
    const key = `${name} ${connectMs}`
    let shared = this.#byKey.get(key)
    if (shared === undefined) {
      const previous = this.#previous
      shared = previous === undefined ? undefined : previous.#byKey.get(key)
      if (shared !== undefined) previous!.#adopted.add(shared)
      else shared = new Upstream({ name, urls, pool: this.#settings.upstreamPool, connectMs, log: this.#log, now: this.#settings.now })
      this.#byKey.set(key, shared)
      for (const origin of shared.origins) this.#byOrigin.set(origin, shared)
    }
    return { upstream: shared, headersMs, bodyIdleMs }
  }

  get all (): Upstream[] {
    return [...this.#byKey.values()]
  }

  /** What reply-from calls `undici`: any object with `request` is taken as its dispatcher. One for every config: the target says where. */
  static readonly dispatcher = {
    request (request: UpstreamRequest, done: ResponseCallback): void {
      const headers = request.headers as TaggedHeaders
      const target = headers[TARGET]!
      target.upstream.send(request, headers[CALLER]!, target, done)
    }
  }

  /**
   * A body that stalls after the headers ends the response (undici's body timeout destroys the
   * stream the caller's answer is piped from); undici reports it on its diagnostics channel only,
   * which is watched here to count and log it. Errors of other requests are ignored.
   */
  readonly #onRequestError = (message: unknown): void => {
    const { request, error } = message as { request: { origin?: unknown }, error: Error & { code?: string } }
    if (error.code !== 'UND_ERR_BODY_TIMEOUT') return
    this.#byOrigin.get(String(request.origin))?.bodyStalled(String(request.origin), error)
  }

  /** Until close: the body-timeout watch. */
  watch (): void {
    subscribe('undici:request:error', this.#onRequestError)
  }

  async close (): Promise<void> {
    unsubscribe('undici:request:error', this.#onRequestError)
    await Promise.all(this.all.map(async (upstream) => await upstream.close()))
  }

  /**
   * After a reload made `next` current: the upstreams it did not take over are closed once their
   * requests in flight have finished (undici's Pool.close waits for them); the rest live on in `next`.
   */
  async retire (): Promise<void> {
    unsubscribe('undici:request:error', this.#onRequestError)
    await Promise.all(this.all.filter((upstream) => !this.#adopted.has(upstream)).map(async (upstream) => await upstream.close()))
  }
}
