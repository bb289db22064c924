import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Link, type Span, type SpanContext, type SpanOptions, type Tracer } from '@opentelemetry/api'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { outcomeOf, pathAndQuery, toOAuthError, type AuditEvent, type MacIdentity, type Metrics, type OAuthError, type Store, type TokenCacheAnswer, type VerifyObserver, type VerifyWatch } from '../../../plugin/index.ts'
import type { ProxyTracing } from '../../open-api/proxy.ts'
import type { RouteTarget } from '../../open-api/upstreams/upstreams.ts'
import type { DroppedSpans } from './dropped-spans.ts'
import type { Sampling } from './sampling.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's server span, when it is recorded; null when it is not sampled or tracing is off. */
    traceSpan: Span | null
    /** The context of a recorded server span, for its children; null when it is not recorded. */
    traceContext: Context | null
    /** The upstream request's client span, while it is being recorded. */
    upstreamSpan: Span | null
  }
}

export interface TracingOptions {
  /** Every caller's `traceparent` parents the server span (gateway config `tracing.acceptIncomingContext`). */
  acceptIncomingContext: boolean
  /** Whether the request's peer is a trusted proxy, whose trace context is taken (default: no one). */
  trustedPeer?: (request: FastifyRequest) => boolean
}

/** The endpoints whose spans carry a grant type, a client id and an outcome. */
const OAUTH_ROUTES = new Set(['/oauth2/token', '/oauth2/rfc/token', '/oauth2/revoke', '/oauth2/introspect', '/oauth2/authorize', '/oauth2/signin', '/oauth2/signout'])
const GRANT_TYPES = new Set(['authorization_code', 'refresh_token', 'client_credentials', 'password', 'implicit'])
/** A client id as the registry makes them; anything else a caller sent is not recorded (it could be a pasted secret). */
const CLIENT_ID = /^[A-Za-z0-9_-]{1,64}$/
/** The audit events that say how an OAuth request ended, as its span's outcome. */
const AUDIT_OUTCOMES: Partial<Record<AuditEvent['type'], string>> = {
  'grant.issued': 'granted',
  'code.exchanged': 'issued',
  'refresh.rotated': 'issued',
  'reuse.detected': 'reuse_detected',
  'grant.revoked': 'revoked',
  'signin.failed': 'signin_failed',
  'consent.given': 'consent_given',
  'consent.denied': 'consent_denied'
}

const SERVER: SpanOptions = { kind: SpanKind.SERVER }
const INTERNAL: SpanOptions = { kind: SpanKind.INTERNAL }
const nobody = (): boolean => false

function failed (span: Span, status: number): void {
  span.setAttribute('error.type', String(status))
  span.setStatus({ code: SpanStatusCode.ERROR })
}

/** A refusal's reason and code on a span; error status only for the gateway's own failures (5xx). */
function refusedOn (span: Span, failure: OAuthError, outcome: string): void {
  span.setAttribute('macgate.outcome', outcome)
  span.setAttribute('macgate.error_code', failure.errno)
  if (failure.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: failure.kind })
}

/** `macgate.verify`: one MAC check, ended by the hook with the identity or the refusal. */
class VerifySpan implements VerifyWatch {
  tokenCache: TokenCacheAnswer | undefined = undefined
  readonly #span: Span
  readonly #server: Span

  constructor (span: Span, server: Span) {
    this.#span = span
    this.#server = server
  }

  end (identity: MacIdentity | undefined, failure: OAuthError | undefined): void {
    const span = this.#span
    if (this.tokenCache !== undefined) span.setAttribute('macgate.token_cache', this.tokenCache)
    if (identity !== undefined) {
      span.setAttribute('macgate.client_id', identity.clientId)
      span.setAttribute('macgate.outcome', 'verified')
      this.#server.setAttribute('macgate.client_id', identity.clientId)
    }
    if (failure !== undefined) {
      const outcome = outcomeOf(failure)
      refusedOn(span, failure, outcome)
      refusedOn(this.#server, failure, outcome)
    }
    span.end()
  }
}

/** A handler runs in its request's recorded context (body parsing, on stream events, left it). */
function reenterContext (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  const active = request.traceContext
  if (active === null) return done()
  context.with(active, done)
}

/** The upstream's address as the client span names it, once per upstream. */
const addresses = new WeakMap<object, Attributes>()
function upstreamAttributes (target: RouteTarget): Attributes {
  let attributes = addresses.get(target.upstream)
  if (attributes === undefined) {
    const url = new URL(target.upstream.name.split(',')[0]!)
    const socket = url.protocol.startsWith('unix+')
    attributes = socket
      ? { 'server.address': decodeURIComponent(url.host), 'network.transport': 'unix' }
      : { 'server.address': url.hostname, 'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)) }
    addresses.set(target.upstream, attributes)
  }
  return attributes
}

/**
 * The gateway's tracing, with the SDK started (sdk.ts): one server span per request on the public
 * listener, the MAC check's span, the store commands a request waits for, the upstream request's
 * client span, and the OAuth endpoints' outcome. A caller's trace context parents the server span
 * only from a trusted peer (or with `acceptIncomingContext`); anyone else's is kept as a link, so
 * that no outsider decides what is sampled. The sampler is asked before any span is made
 * (sampling.ts): an unsampled request gets no span at all, and no child either, so it costs the
 * decision and nothing else.
 */
export class GatewayTracing {
  readonly tracer: Tracer = trace.getTracer('macgate')
  readonly dropped: DroppedSpans
  readonly #sampling: Sampling
  readonly #shutdown: () => Promise<void>
  /** Spans whose outcome an audit event already set. */
  readonly #outcomeSet = new WeakSet<Span>()

  constructor (dropped: DroppedSpans, sampling: Sampling, shutdown: () => Promise<void>) {
    this.dropped = dropped
    this.#sampling = sampling
    this.#shutdown = shutdown
  }

  /**
   * Exports what is queued (within the exporter's timeout) and stops; a collector that cannot take
   * them costs those spans (counted), never the shutdown.
   */
  async shutdown (): Promise<void> {
    await this.#shutdown().catch(() => {})
  }

  /** The hooks of the server span, on the root instance before any route: every request of the public listener passes them. */
  register (app: FastifyInstance, { acceptIncomingContext, trustedPeer = nobody }: TracingOptions): void {
    const tracer = this.tracer
    const sampling = this.#sampling
    this.dropped.warnTo((fields, message) => { app.log.warn(fields, message) })
    app.decorateRequest('traceSpan', null)
    app.decorateRequest('traceContext', null)
    app.decorateRequest('upstreamSpan', null)
    app.addHook('onRequest', function startServerSpan (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
      const headers = request.headers
      let parent = ROOT_CONTEXT
      let options = SERVER
      if (headers.traceparent !== undefined) {
        const incoming = propagation.extract(ROOT_CONTEXT, headers)
        if (acceptIncomingContext || trustedPeer(request)) parent = incoming
        else {
          const caller = trace.getSpanContext(incoming)
          if (caller !== undefined) options = { kind: SpanKind.SERVER, links: [{ context: caller } satisfies Link] }
        }
      }
      const span = sampling.startSpan(tracer, request.method, options, parent)
      if (span === undefined) return done()
      request.traceSpan = span
      const host = headers.host ?? ''
      const colon = host.lastIndexOf(':')
      span.setAttributes({
        'http.request.method': request.method,
        'url.path': pathAndQuery(request).path,
        'url.scheme': 'http',
        'server.address': colon > host.lastIndexOf(']') ? host.slice(0, colon) : host,
        'client.address': request.ip,
        'network.protocol.version': request.raw.httpVersion
      })
      if (colon > host.lastIndexOf(']')) span.setAttribute('server.port', Number(host.slice(colon + 1)))
      const active = trace.setSpan(parent, span)
      request.traceContext = active
      // The rest of the request's hooks run in its context (store spans find their parent there).
      context.with(active, done)
    })
    // Body parsing leaves the context (stream events): the handlers of the plugin's routes get it
    // back. Not the proxy's wildcard: its store calls are made in onRequest, its upstream span is
    // made from the request's context explicitly, and a hook stage of its own costs every request.
    app.addHook('onRoute', (route) => {
      if (route.url === '/*') return
      const own = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler]
      route.preHandler = [reenterContext, ...own]
    })
    app.addHook('onError', (request: FastifyRequest, _reply: FastifyReply, error: FastifyError, done: () => void) => {
      const span = request.traceSpan
      if (span !== null && !this.#outcomeSet.has(span)) {
        const failure = toOAuthError(error)
        refusedOn(span, failure, failure.kind)
        this.#outcomeSet.add(span)
      }
      done()
    })
    app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      const span = request.traceSpan
      if (span === null) return done()
      const status = reply.statusCode
      const upstream = request.upstreamSpan
      if (upstream !== null) {
        upstream.setAttribute('http.response.status_code', status)
        if (status >= 500) failed(upstream, status)
        upstream.end()
      }
      const configured = request.routeOptions.url
      const route = request.openApiRoute ?? (configured === '/*' ? undefined : configured)
      if (route !== undefined) {
        span.updateName(`${request.method} ${route}`)
        span.setAttribute('http.route', route)
        if (OAUTH_ROUTES.has(route)) this.#oauthAttributes(request, span, status)
      }
      span.setAttribute('http.response.status_code', status)
      if (status >= 500) failed(span, status)
      span.end()
      done()
    })
  }

  /** The grant type and client id (as sent, when they look like ours), and an outcome when no audit event or error gave one. */
  #oauthAttributes (request: FastifyRequest, span: Span, status: number): void {
    const body = typeof request.body === 'object' && request.body !== null ? request.body as Record<string, unknown> : {}
    const query = request.query as Record<string, unknown> | undefined ?? {}
    const grantType = body.grant_type ?? query.grant_type
    if (typeof grantType === 'string') span.setAttribute('macgate.grant_type', GRANT_TYPES.has(grantType) ? grantType : 'other')
    const clientId = body.client_id ?? query.client_id ?? basicUser(request.headers.authorization)
    if (typeof clientId === 'string' && CLIENT_ID.test(clientId)) span.setAttribute('macgate.client_id', clientId)
    if (!this.#outcomeSet.has(span)) span.setAttribute('macgate.outcome', status < 400 ? 'ok' : `status_${status}`)
  }

  /**
   * The audit trail's events name how a grant, sign-in or consent ended: on the span of the request
   * that caused them, the first one (a consent, then the grant it made; a reuse, then the revocation).
   */
  watchAudit (event: AuditEvent): void {
    const outcome = AUDIT_OUTCOMES[event.type]
    const span = trace.getActiveSpan()
    if (outcome === undefined || span === undefined || !span.isRecording() || this.#outcomeSet.has(span)) return
    span.setAttribute('macgate.outcome', outcome)
    if ('clientId' in event) span.setAttribute('macgate.client_id', event.clientId)
    this.#outcomeSet.add(span)
  }

  /** The verify span, under a recorded server span only. */
  readonly verifyObserver: VerifyObserver = (request) => {
    const parent = request.traceContext
    if (parent === null) return undefined
    return new VerifySpan(this.tracer.startSpan('macgate.verify', INTERNAL, parent), request.traceSpan!)
  }

  /**
   * The upstream gets at most one `traceparent`: the caller's trace headers are taken out, and for
   * a sampled request macgate's own put in, naming its client span. Baggage goes on only from a
   * trusted caller (it is in the parent context only then).
   */
  readonly upstreamHeaders: ProxyTracing['upstreamHeaders'] = (request, headers) => {
    delete headers.traceparent
    delete headers.tracestate
    delete headers.baggage
    const parent = request.traceContext
    // Unsampled: nothing recorded to name, and an unsampled traceparent would cost every request
    // its context and string; the upstream decides for itself.
    if (parent === null) return
    // reply-from's one retry (an instance that refused the connection) asks again: the first attempt's span ends as failed.
    const attempt = request.upstreamSpan
    if (attempt !== null) {
      attempt.setStatus({ code: SpanStatusCode.ERROR, message: 'retried' })
      attempt.end()
    }
    const span = this.tracer.startSpan(request.method, {
      kind: SpanKind.CLIENT,
      attributes: { 'http.request.method': request.method, 'macgate.upstream': request.upstreamTarget!.upstream.name, ...upstreamAttributes(request.upstreamTarget!) }
    }, parent)
    request.upstreamSpan = span
    propagation.inject(trace.setSpan(parent, span), headers)
  }

  /** What the proxy takes (proxy.ts). */
  get proxy (): ProxyTracing {
    return { verifyObserver: this.verifyObserver, upstreamHeaders: this.upstreamHeaders }
  }

  /**
   * The store's commands as client spans under the request waiting for them (found in the async
   * context). A command sent once for the requests of one event-loop turn (a nonce batch, with its
   * size; the turn's token reads) is one span carrying a link to the span of each recorded request
   * it served (the form the OpenTelemetry spec gives batch processing: one operation, linked to
   * what it was done for), as a child of the first of them; no span when none of them is recorded.
   * The command name alone: keys and arguments carry grant ids, token sets and sessions. The
   * store's latency metric is told as before.
   */
  observeStore (store: Store, metrics: Metrics): void {
    store.observeCommands?.((command, seconds, failedCommand, size, waiters) => {
      metrics.observeStoreCommand(command, seconds, failedCommand)
      let parent: Context
      let links: Link[] | undefined
      if (size === undefined && waiters === undefined) {
        const span = trace.getSpan(context.active())
        if (span === undefined || !span.isRecording()) return
        parent = context.active()
      } else {
        const served = waiters as SpanContext[] | undefined
        if (served === undefined || served.length === 0) return
        parent = trace.setSpanContext(ROOT_CONTEXT, served[0]!)
        links = served.map((waiting) => ({ context: waiting }))
      }
      const attributes: Attributes = { 'db.system.name': 'redis', 'db.operation.name': command }
      if (size !== undefined) attributes['macgate.nonce_batch.size'] = size
      const span = this.tracer.startSpan(command, { kind: SpanKind.CLIENT, attributes, links, startTime: Date.now() - seconds * 1000 }, parent)
      if (failedCommand) span.setStatus({ code: SpanStatusCode.ERROR, message: 'store unavailable' })
      span.end()
    }, recordedWaiter)
  }

  /** The ids an access line carries, when the request's span is sampled. */
  idsOf (request: FastifyRequest): SpanContext | undefined {
    const span = request.traceSpan
    if (span === null) return undefined
    const ids = span.spanContext()
    return (ids.traceFlags & TraceFlags.SAMPLED) === 0 ? undefined : ids
  }
}

/** Who waits for a nonce being batched: the recorded span of the request in whose context it comes, as the batch span's link. */
function recordedWaiter (): SpanContext | undefined {
  const span = trace.getSpan(context.active())
  return span !== undefined && span.isRecording() ? span.spanContext() : undefined
}

/** The user name of a Basic Authorization header (a client id), never its password. */
function basicUser (header: string | undefined): string | undefined {
  if (header === undefined || !header.startsWith('Basic ')) return undefined
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon === -1) return undefined
  try {
    return decodeURIComponent(decoded.slice(0, colon))
  } catch {
    return undefined
  }
}
