import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { LogController, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import type { Server } from 'node:http'
import macgate, { splitPathAndQuery, SWAPPABLE_SETTINGS, type Store } from '../../plugin/index.ts'
import { parseConfig, type GatewayConfig } from '../config/gateway-config.ts'
import { registerDemo, type DemoClient } from '../site/demo/routes.ts'
import { landingPathsLeft, registerLanding } from '../site/landing.ts'
import { registerProxy, SHIPPED_PROXY_PARTS, type ProxyConfig, type ProxyParts } from '../open-api/proxy.ts'
import { ConfigReload, type PartOutcome } from '../operator/reload.ts'
import { Drain } from '../edge/drain.ts'
import { fromTrustedProxy, trustedProxies } from '../edge/trusted-proxies.ts'
import { buildSampleApi } from '../site/sample-api.ts'
import { logAuditEvents, registerAccessLog } from '../operator/access-log.ts'
import { registerHealth } from '../operator/health.ts'
import { registerRequestMetrics } from '../operator/request-metrics.ts'
import { frameworkErrors, handleError } from '../open-api/error-answers.ts'
import { guardConnections, transportOptions } from '../edge/client-connections.ts'
import { registerSecureTransport } from '../edge/secure-transport.ts'
import { configLabels, TlsCertificates } from '../edge/tls.ts'
import { registerTlsReload } from '../edge/tls-reload.ts'
import type { GatewayTracing } from '../operator/tracing/gateway-tracing.ts'

/** Request logs keep the path and drop the query: codes, secrets and tokens travel there. */
export const logSerializers = {
  req (request: { method: string, url: string, ip?: string }) {
    return { method: request.method, path: splitPathAndQuery(request.url).path, ip: request.ip }
  }
}

export interface GatewayOptions {
  store: Store
  /** The gateway config (see config/gateway-config.ts); defaults fit the sample open API. */
  config?: Partial<GatewayConfig>
  /** Signs sessions and derives openIds; default: one kept in the store. */
  secret?: string
  logger?: FastifyServerOptions['logger']
  /**
   * The certificates, already read (`macgate start` reads them to fail the start with the flag's
   * or field's name); default: read from `config.tls`, if set.
   */
  tls?: TlsCertificates
  /** A registered client the /demo page plays. */
  demo?: DemoClient
  /** The plugin's one clock, Unix ms (tests step it): expiries, graces, windows, nonce freshness; also the upstreams' cool-downs. Default Date.now. */
  clock?: () => number
  /** Tracing, with its SDK started (`startTracing`); without it nothing of tracing is on a request's path. */
  tracing?: GatewayTracing
  /** Whether a request comes from a trusted proxy, whose trace context the request's span continues; default: none. */
  trustedPeer?: (request: FastifyRequest) => boolean
}

/**
 * The parts of a proxied request's path the gateway is built with: `buildGateway` always takes the
 * shipped ones. Only the benchmark's ladder (bench/ladder-gateway.ts) calls `assembleGateway` with
 * stand-ins, to measure what each part costs; the package's entry (gateway/index.ts) exports
 * neither, so no option a library user can pass leaves the MAC check out.
 */
export interface RequestPathParts extends ProxyParts {
  /** Times every request (operator/request-metrics.ts). */
  requestMetrics: (app: FastifyInstance) => void
}

export const SHIPPED_PARTS: RequestPathParts = {
  ...SHIPPED_PROXY_PARTS,
  requestMetrics: (app) => { registerRequestMetrics(app, app.macgate.metrics.requestDuration) }
}

/**
 * The sample open API, which trusts the identity headers as a real upstream would: on a Unix socket
 * in a directory only this user can enter (mkdtemp makes it 0700), never on a TCP port another
 * local process could reach with spoofed headers. Closed and removed with the gateway.
 */
async function startSampleUpstream (app: FastifyInstance): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'macgate-sample-'))
  const socketPath = join(directory, 'api.sock')
  const sample = buildSampleApi()
  app.addHook('onClose', async () => {
    await sample.close()
    await rm(directory, { recursive: true, force: true })
  })
  await sample.listen({ path: socketPath })
  return `unix+http://${encodeURIComponent(socketPath)}/`
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The running config and the parts that re-apply a new one (reload.ts). */
    configReload: ConfigReload
    /** Set on SIGTERM: readiness answers 503 from then on (drain.ts). */
    drain: Drain
  }
}

/** The macgate service: the authorization server, and the open API behind MAC verification. */
export async function buildGateway (options: GatewayOptions): Promise<FastifyInstance> {
  return await assembleGateway(options, SHIPPED_PARTS)
}

/** `buildGateway` with the given parts of a proxied request's path (see RequestPathParts). */
export async function assembleGateway ({ store, config: input = {}, secret, logger = false, demo, clock, tls: given, tracing, trustedPeer }: GatewayOptions, parts: RequestPathParts): Promise<FastifyInstance> {
  const config = parseConfig(input)
  const tls = given ?? (config.tls === undefined ? undefined : await TlsCertificates.load(config.tls, configLabels(config.tls.length)))
  // The server Fastify makes is HTTP/1, HTTPS or HTTP/2 (client-connections.ts); the instance's
  // type stays the HTTP/1 one, which every route and hook here is written against.
  const app = Fastify({
    logger: logger === false ? false : { ...(typeof logger === 'object' ? logger : {}), serializers: logSerializers },
    // Never trust a client-supplied request id into the logs.
    requestIdHeader: false,
    // One access line per request (access-log.ts), not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    frameworkErrors,
    // Towards callers (config.clientTimeouts): a connection that has not sent its headers within
    // headersMs is closed at the next check, so within headersMs + checkIntervalMs.
    ...transportOptions(config.clientTimeouts, tls, config.http2),
    // The proxies in front, Fastify's list form: request.ip is then the right-most address of
    // X-Forwarded-For that is not a trusted proxy (every per-address limit, log and event reads it).
    ...(config.trustProxy !== undefined && { trustProxy: config.trustProxy })
  } as FastifyServerOptions) as unknown as FastifyInstance
  app.decorate('trustedProxy', trustedProxies(config.trustProxy))
  app.setErrorHandler(handleError)
  // First, so that every route (the plugin's too) has its hooks.
  if (tracing !== undefined) tracing.register(app, { ...config.tracing, trustedPeer: trustedPeer ?? ((request: FastifyRequest) => fromTrustedProxy(request)) })
  if (logger !== false) registerAccessLog(app, undefined, tracing === undefined ? undefined : (request) => tracing.idsOf(request))
  guardConnections(app, config.clientTimeouts, tls, config.http2)
  registerTlsReload(app, tls)
  if (tls !== undefined) registerSecureTransport(app, { hsts: config.hsts, http2: config.http2 !== false })
  registerLanding(app, { routes: config.routes, demo: demo !== undefined })
  // The plugin's settings go through unchanged; the gateway keeps only where and what to proxy.
  const { upstream, routes, forwardMethodOverride, timeouts, upstreamPool, clientTimeouts, tls: _tls, http2, hsts, trustProxy, drainDelayMs, drainMs, tracing: _tracing, ...settings } = config
  await app.register(macgate, { ...settings, store, ...(secret !== undefined && { secret }), ...(clock !== undefined && { clock }) })
  const reload = new ConfigReload(config, app.macgate.metrics.registry, app.log)
  app.decorate('configReload', reload)
  const draining = new Drain()
  app.decorate('drain', draining)
  registerHealth(app, store, draining)
  parts.requestMetrics(app)
  if (logger !== false) logAuditEvents(app.macgate.events, app.log)
  if (tracing !== undefined) {
    tracing.observeStore(store, app.macgate.metrics)
    tracing.dropped.register(app.macgate.metrics.registry)
    app.macgate.events.on('audit', (event) => { tracing.watchAudit(event) })
  }
  const sample = upstream === undefined ? await startSampleUpstream(app) : undefined
  const useProxyConfig = await registerProxy(app, { ...proxyConfig(config, sample)!, logging: logger !== false, clock: clock ?? Date.now, parts, ...(tracing !== undefined && { tracing: tracing.proxy }) })
  await registerDemo(app, demo)
  registerReloaders(app, reload, useProxyConfig, sample)
  return app
}

/** The proxy's part of a config; without an upstream, the sample API's. */
function proxyConfig (config: GatewayConfig, sample: string | undefined): ProxyConfig | undefined {
  const upstream = config.upstream ?? sample
  if (upstream === undefined) return undefined
  const { routes, forwardMethodOverride, timeouts, upstreamPool, cors } = config
  return { upstream, routes, headerOptions: { forwardMethodOverride }, timeouts, upstreamPool, cors }
}

/**
 * What a reload applies in flight (reload.ts): routes, upstreams and their pools, timeouts, quotas
 * (on routes) and CORS; the plugin's swappable settings; the client timeouts but the check
 * interval (Node's server takes it once); the drain times (read at SIGTERM). Anything else that
 * changed waits for a restart.
 */
function registerReloaders (app: FastifyInstance, reload: ConfigReload, useProxyConfig: (next: ProxyConfig) => void, sample: string | undefined): void {
  reload.register({
    fields: ['upstream', 'routes', 'forwardMethodOverride', 'timeouts', 'upstreamPool', 'cors'],
    apply (next, previous) {
      const needsRestart: string[] = []
      // Dropping the upstream would need the sample API, which only a start without one runs.
      if (next.upstream === undefined && sample === undefined) {
        next.upstream = previous.upstream
        needsRestart.push('upstream')
      }
      // The landing page's paths are routes of their own, taken or left at the start (landing.ts).
      if (!same(landingPathsLeft(next.routes), landingPathsLeft(previous.routes))) needsRestart.push('routes (on /, /favicon.svg or /favicon.ico)')
      useProxyConfig(proxyConfig(next, sample)!)
      return { needsRestart }
    }
  })
  reload.register({
    fields: SWAPPABLE_SETTINGS,
    apply: (next) => ({ changed: app.swapMacgateSettings({ signedHosts: next.signedHosts, cors: next.cors }) })
  })
  reload.register({ fields: ['clientTimeouts'], apply: (next, previous) => applyClientTimeouts(app.server, next, previous) })
  reload.register({ fields: ['drainDelayMs', 'drainMs'], apply: () => undefined })
  // The TLS files are read again at every reload, changed or not (a renewed certificate keeps its
  // paths); TLS turned on or off needs a restart, as do `http2` and `hsts` (claimed by no reloader).
  reload.register({
    fields: ['tls'],
    async apply (next, previous) {
      if ((next.tls === undefined) !== (previous.tls === undefined)) {
        next.tls = previous.tls
        return { needsRestart: ['tls'] }
      }
      const { renewed, kept } = await app.reloadTls(next.tls, next.tls === undefined ? undefined : configLabels(next.tls.length))
      if (kept.length > 0) next.tls = previous.tls
      return { changed: renewed.length > 0 && kept.length === 0 && !same(next.tls, previous.tls) ? ['tls'] : [] }
    }
  })
}

/** Node's server reads these per connection and request; its check interval is fixed at its start. */
function applyClientTimeouts (server: Server, next: GatewayConfig, previous: GatewayConfig): PartOutcome | undefined {
  const { headersMs, requestMs, keepAliveMs, checkIntervalMs } = next.clientTimeouts
  server.headersTimeout = headersMs
  server.requestTimeout = requestMs
  server.keepAliveTimeout = keepAliveMs
  if (checkIntervalMs === previous.clientTimeouts.checkIntervalMs) return undefined
  next.clientTimeouts = { ...next.clientTimeouts, checkIntervalMs: previous.clientTimeouts.checkIntervalMs }
  return { needsRestart: ['clientTimeouts.checkIntervalMs'], changed: same(next.clientTimeouts, previous.clientTimeouts) ? [] : ['clientTimeouts'] }
}

function same (a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}
