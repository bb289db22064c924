import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import fastifyReplyFrom, { type FastifyReplyFromHooks } from '@fastify/reply-from'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { errors, pathAndQuery, sendOpenApiError, toOAuthError, type MacAuthHook, type RouteQuota, type VerifyObserver } from '../../plugin/index.ts'
import type { RouteRule, UpstreamPoolSettings, UpstreamTimeouts } from '../config/gateway-config.ts'
import { sendFailure } from './error-answers.ts'
import { upstreamHeaders, upstreamQuery, type UpstreamHeaderOptions } from './upstream-request.ts'
import { answerCors, openApiCors, type OpenApiCors } from './open-api-cors.ts'
import { forwardedFor } from '../edge/trusted-proxies.ts'
import { FailureLog } from './upstreams/failure-log.ts'
import { registerUpstreamMetrics } from './upstreams/metrics.ts'
import { isRetryable } from './upstreams/upstream.ts'
import { callerLeft } from './upstreams/caller-signal.ts'
import { CALLER, TARGET, Upstreams, type RouteTarget } from './upstreams/upstreams.ts'

/**
 * reply-from's own base URL, never connected to: each route's upstream is its target's
 * (upstreams.ts), and undici writes each instance's own Host.
 */
const PROXY_BASE = 'http://upstream.macgate.invalid'

declare module 'fastify' {
  interface FastifyRequest {
    /** The matched route's upstream and timeouts, set by routeCheck. */
    upstreamTarget: ProxyTarget | null
  }
}

interface Route {
  rule: RouteRule
  check: MacAuthHook
  target: ProxyTarget
}

/** Which configured route a path falls under: an exact path, else the longest `/*` prefix. */
export class RouteTable {
  readonly #exact = new Map<string, Route>()
  readonly #prefixes: Array<[string, Route]> = []

  constructor (rules: RouteRule[], checkFor: (rule: RouteRule) => MacAuthHook, targetFor: (rule: RouteRule) => ProxyTarget) {
    for (const rule of rules) {
      const route = { rule, check: checkFor(rule), target: targetFor(rule) }
      if (rule.path.endsWith('/*')) this.#prefixes.push([rule.path.slice(0, -1), route])
      else this.#exact.set(rule.path, route)
    }
    this.#prefixes.sort(([a], [b]) => b.length - a.length)
  }

  match (path: string): Route | undefined {
    return this.#exact.get(path) ?? this.#prefixes.find(([prefix]) => path.startsWith(prefix))?.[1]
  }
}

/** A route's quota as the MAC check counts it: named by the route's path, so each route counts its own requests. */
export function routeQuota (rule: RouteRule): RouteQuota | undefined {
  return rule.quota === undefined ? undefined : { route: rule.path, perMinute: rule.quota.perMinute }
}

/**
 * Why a path must not go upstream, or undefined: a `..` segment, however encoded, a backslash read as
 * `/` as URL parsers read an http URL's path (`/a/b\..\..\c` is `/c` to them): the upstream would
 * resolve it to a path the route check never judged. Or a percent-encoding that does not decode
 * (the router refuses those first; reply-from decodes the path and would throw).
 */
export function pathRefusal (path: string): string | undefined {
  if (!path.includes('.') && !path.includes('%')) return undefined
  let decoded: string
  try {
    decoded = decodeURIComponent(path).replaceAll('\\', '/')
  } catch {
    return 'the path has a bad percent-encoding'
  }
  return decoded === '..' || decoded.includes('/..') || decoded.includes('../') ? 'the path has a .. segment' : undefined
}

/** A method no route of the app has: the open API's 405 on a configured path, else its 404. */
function notFoundFor (table: () => RouteTable) {
  return async function notFound (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const { path } = pathAndQuery(request)
    const allowed = path === '/oauth2/token' ? ['GET', 'POST'] : path.startsWith('/oauth2/') ? undefined : (reply.raw as HoldingResponse)[HELD]?.table.match(path)?.rule.methods ?? table().match(path)?.rule.methods
    if (allowed === undefined) return await sendFailure(request, reply, errors.noSuchApi())
    reply.header('allow', allowed.join(', '))
    return await sendFailure(request, reply, errors.methodNotAllowed(`use ${allowed.join(' or ')}`))
  }
}

/** The caller's answer for a failed upstream request (classified where it failed: upstreams/failure.ts). */
function answerFailure (reply: FastifyReply, error: Error): void {
  // reply-from wraps what the dispatcher gave; ours is the cause.
  void sendFailure(reply.request, reply, toOAuthError(error.cause ?? error))
}

/**
 * reply-from retries only as decided here: once, for a GET or HEAD that never reached an instance
 * while another is in (upstream.ts marks those). Its retry of a GET answered 503 (`maxRetriesOn503`,
 * ten times by default) is off: the upstream saw that request and said it is overloaded, the
 * caller gets its 503 and Retry-After, and ten more of the same would add to the overload.
 */
function retryDelay ({ err, attempt }: { err?: Error | null, attempt: number }): number | null {
  return attempt === 0 && isRetryable(err) ? 1 : null
}

/**
 * Two parts of a proxied request's path, handed to the proxy as themselves: the gateway is built
 * with `SHIPPED_PROXY_PARTS` only; the benchmark's ladder (bench/ladder-gateway.ts, which the
 * package's entry does not reach) puts a stand-in for one or both to measure what each costs.
 */
export interface ProxyParts {
  /** The route's check: answers a refusal itself, calls `done` only for a verified request. */
  check: (app: FastifyInstance, rule: RouteRule, observer: VerifyObserver | undefined) => MacAuthHook
  /**
   * What the upstream gets, from reply-from's copy of the request's headers: a new object, which
   * the proxy then keys for the dispatcher (a property added to reply-from's copy, a spread, costs
   * a map of its own each time: upstream-request.ts).
   */
  rewriteHeaders: (request: FastifyRequest, headers: IncomingHttpHeaders, target: ProxyTarget) => IncomingHttpHeaders
}

export const SHIPPED_PROXY_PARTS: ProxyParts = {
  check: (app, rule, observer) => app.macAuth({ scopes: rule.scopes, match: rule.match, quota: routeQuota(rule), observer }),
  rewriteHeaders (request, headers, target) {
    return upstreamHeaders(request.macIdentity!, forwardedFor(request), headers, target.headerOptions, request.ips === undefined ? undefined : request.protocol)
  }
}

/** What tracing (operator/tracing/gateway-tracing.ts) adds to proxied requests; undefined when it is off. */
export interface ProxyTracing {
  verifyObserver: VerifyObserver
  /** The caller's trace headers out, macgate's upstream span's in. */
  upstreamHeaders: (request: FastifyRequest, headers: Record<string, unknown>) => void
}

/** What the proxy takes from the config: each of these can change at a reload (reload.ts). */
export interface ProxyConfig {
  /** The default upstream: one URL, or several instances. */
  upstream: string | string[]
  routes: RouteRule[]
  headerOptions: UpstreamHeaderOptions
  timeouts: UpstreamTimeouts
  upstreamPool: UpstreamPoolSettings
  /** The open API's CORS (the plugin's `cors`). */
  cors: boolean
}

export interface ProxyOptions extends ProxyConfig {
  logging: boolean
  /** The gateway's clock (Unix ms; tests step it): upstream cool-downs and the failure log's seconds. */
  clock: () => number
  parts: ProxyParts
  tracing?: ProxyTracing
}

/** A route's upstream target, with the header rules of the config it was made under. */
export interface ProxyTarget extends RouteTarget {
  headerOptions: UpstreamHeaderOptions
}

/**
 * One config's routes, upstreams and CORS, swapped whole at a reload. A request keeps the one it
 * started under (`holding` counts them, until each response closes), so that the upstreams the
 * next config dropped are closed only once no request can still send to them.
 */
class ProxyState {
  readonly table: RouteTable
  readonly upstreams: Upstreams
  readonly cors: OpenApiCors | undefined
  holding = 0
  #retired = false

  constructor (app: FastifyInstance, config: ProxyConfig, checkFor: (rule: RouteRule) => MacAuthHook, log: FailureLog, clock: () => number, previous?: ProxyState) {
    this.upstreams = new Upstreams({ timeouts: config.timeouts, upstreamPool: config.upstreamPool, now: clock }, log, previous?.upstreams)
    const upstreams = this.upstreams
    this.table = new RouteTable(config.routes, checkFor, (rule) => ({ ...upstreams.target(rule.upstream ?? config.upstream, rule.timeouts), headerOptions: config.headerOptions }))
    this.cors = openApiCors(config.cors, app.clientOrigins, config.headerOptions)
    upstreams.watch()
  }

  /** No longer current: its own upstreams close once its last request has. */
  retire (onError: (error: unknown) => void): void {
    this.#retired = true
    if (this.holding === 0) this.upstreams.retire().catch(onError)
  }

  release (onError: (error: unknown) => void): void {
    if (--this.holding === 0 && this.#retired) this.upstreams.retire().catch(onError)
  }
}

const HELD = Symbol('macgate.proxyState')
type HoldingResponse = ServerResponse & { [HELD]?: ProxyState }
const logRetireFailure = (error: unknown): void => { console.error('closing a retired upstream failed', error) }

/**
 * A response's one close listener (a `this` function, one for all). When the caller left before its
 * answer was out, the upstream request is cancelled through its caller's signal
 * (upstreams/caller-signal.ts); an HTTP/2 answer whose stream the caller reset counts as finished
 * (Node's compatibility layer), and its request says `aborted`. Then the response lets go of its
 * config's state. A request refused before the proxy has no upstream request, and no signal.
 */
function responseClosed (this: HoldingResponse): void {
  if (!this.writableFinished || this.req.aborted) callerLeft(this.req)
  this[HELD]?.release(logRetireFailure)
}

/**
 * Proxies the configured routes to their upstreams, each behind a MAC check with its scopes.
 * Answers the function that makes a new config's routes, upstreams and CORS current (a reload).
 */
export async function registerProxy (app: FastifyInstance, { logging, clock, parts: { check, rewriteHeaders }, tracing, ...config }: ProxyOptions): Promise<(next: ProxyConfig) => void> {
  const log = new FailureLog(logging ? app.log : undefined, clock)
  const checkFor = (rule: RouteRule): MacAuthHook => check(app, rule, tracing?.verifyObserver)
  let state = new ProxyState(app, config, checkFor, log, clock)
  app.addHook('onClose', async () => await state.upstreams.close())
  registerUpstreamMetrics(app.macgate.metrics.registry, () => state.upstreams.all)
  app.decorateRequest('upstreamTarget', null)
  // Every method reaches routeCheck (the proxy's wildcard route) or, if no route has it, this.
  const notFound = notFoundFor(() => state.table)
  app.setNotFoundHandler(notFound)
  await app.register(async function proxy (context) {
    // Always there: a reload may turn CORS on; a request that was not looked at costs one WeakMap miss.
    context.addHook('onSend', answerCors)
    // One logger for every proxied request, quiet below error: the proxy client's two info lines per
    // request stay out (access-log.ts writes the one that matters), and so does its warn with a
    // stack for each failed upstream request (upstreams/failure-log.ts writes one a second); no
    // child logger is made per request (a per-route level would rebuild one's methods each time).
    // Without a logger, Fastify makes no child at all: leave its fast path alone.
    if (logging) {
      const quiet = context.log.child({}, { level: 'error' })
      context.setChildLoggerFactory(() => quiet)
    }
    // Callback style, so that Fastify runs it without a promise of its own: every request passes here.
    context.addHook('onRequest', function routeCheck (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) {
      // The config this request runs on to its end (its second pass here, after CORS, included).
      const response = reply.raw as HoldingResponse
      let current = response[HELD]
      if (current === undefined) {
        current = response[HELD] = state
        current.holding++
        // `on`, not `once` (which wraps the listener per call): a response closes once.
        response.on('close', responseClosed)
      }
      const { table, cors } = current
      // A browser's request (Origin) to a route: its origin looked up, a preflight answered, then back here (open-api-cors.ts).
      const { path } = pathAndQuery(request)
      if (cors !== undefined && request.headers.origin !== undefined &&
        cors.defer(request, reply, table.match(path)?.rule.methods, () => { routeCheck.call(this, request, reply, done) }, done)) return
      const route = table.match(path)
      let refusal: Promise<unknown> | undefined
      if (route === undefined || !route.rule.methods.includes(request.method)) refusal = notFound(request, reply)
      // Refused before the check, so that the caller's nonce stays unspent for a plain retry.
      else if (request.headers.upgrade !== undefined) refusal = sendOpenApiError(reply, errors.invalidRequest('protocol upgrades are not proxied'))
      else {
        const refused = pathRefusal(path)
        if (refused !== undefined) refusal = sendOpenApiError(reply, errors.invalidRequest(refused))
      }
      if (refusal !== undefined) {
        refusal.catch(done)
        return
      }
      request.openApiRoute = route!.rule.path
      request.upstreamTarget = route!.target
      // The check answers a refusal itself; the chain goes on (done) only for a verified request.
      route!.check(request, reply, done)
    })
    // reply-from itself, not @fastify/http-proxy around it: routeCheck has already matched the
    // route and refused what could climb out of it (pathRefusal), which http-proxy would do again
    // per request with three URLs; reply-from still keeps the destination on its base. Its
    // dispatcher (ours, upstreams.ts) sends to the route's upstream.
    await context.register(fastifyReplyFrom, {
      base: PROXY_BASE,
      // Any object with `request` is reply-from's dispatcher: ours picks each route's upstream.
      undici: Upstreams.dispatcher as never,
      // Its two info lines per request are not even called (the quiet logger would drop them).
      disableRequestLogging: true
    })
    // The body goes upstream as it comes, never parsed here (text/plain keeps Fastify's own parser and its limit).
    const passBody = (_request: FastifyRequest, body: unknown, done: (error: null, body: unknown) => void): void => { done(null, body) }
    context.addContentTypeParser('application/json', passBody)
    context.addContentTypeParser('*', passBody)
    const forwarding: FastifyReplyFromHooks = {
      // What goes upstream, made from reply-from's copy of the caller's headers.
      rewriteRequestHeaders (request, headers) {
        const target = request.upstreamTarget!
        const upstream = rewriteHeaders(request as FastifyRequest, headers, target)
        // For the dispatcher (upstreams.ts), never sent: undici reads string keys only.
        const keyed = upstream as Record<PropertyKey, unknown>
        keyed[TARGET] = target
        keyed[CALLER] = request.raw
        if (tracing !== undefined) tracing.upstreamHeaders(request as FastifyRequest, keyed)
        return upstream
      },
      queryString: upstreamQuery,
      onError: (reply, { error }) => { answerFailure(reply as FastifyReply, error) },
      retryDelay
    }
    // `/*` matches `/` too; no route of its own for `/`, which the landing page (landing.ts) takes
    // unless a configured route covers it. Every method reaches routeCheck, so an unconfigured one
    // gets the open API's 405 or 404. No source: reply-from forwards the request's own path.
    context.route({
      url: '/*',
      method: ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS'],
      handler (_request, reply) { return reply.from(undefined, forwarding) }
    })
  })
  return function useProxyConfig (next: ProxyConfig): void {
    const previous = state
    state = new ProxyState(app, next, checkFor, log, clock, previous)
    previous.retire((error) => { app.log.error({ err: error }, 'closing a retired upstream failed') })
  }
}
