import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { LogController, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import macgate, { type Store } from '../plugin/index.ts'
import { parseConfig, type GatewayConfig } from './config.ts'
import { registerDemo, type DemoClient } from './demo/routes.ts'
import { registerLanding } from './landing.ts'
import { registerProxy, type ProxyParts } from './proxy.ts'
import { buildSampleApi } from './sample-api.ts'
import { logAuditEvents, registerAccessLog } from './access-log.ts'
import { registerHealth } from './health.ts'
import { registerRequestMetrics } from './request-metrics.ts'
import { frameworkErrors, handleError } from './error-answers.ts'
import type { GatewayTracing } from './tracing/gateway-tracing.ts'

export { parseConfig, loadConfig, ConfigError, sampleRoutes, type GatewayConfig, type RouteRule } from './config.ts'
export { UPSTREAM_POOL } from './proxy.ts'
export { openStore } from './stores.ts'
export { logDestination } from './log-destination.ts'
export { runLoad, signed, signedRequests, roundRobin, zipf, type Credentials, type LoadOptions, type LoadResult, type SetupRequest } from './load/index.ts'
export { startTracing, tracingRefusal, tracingWanted } from './tracing/switch.ts'
export type { GatewayTracing } from './tracing/gateway-tracing.ts'
export { buildAdminServer, withProcessMetrics, type AdminServerOptions } from './admin-server.ts'
export type { DemoClient } from './demo/routes.ts'

/** Request logs keep the path and drop the query: codes, secrets and tokens travel there. */
export const logSerializers = {
  req (request: { method: string, url: string, ip?: string }) {
    return { method: request.method, path: request.url.split('?')[0], ip: request.ip }
  }
}

export interface GatewayOptions {
  store: Store
  /** The gateway config (see config.ts); defaults fit the sample open API. */
  config?: Partial<GatewayConfig>
  /** Signs sessions and derives openIds; default: one kept in the store. */
  secret?: string
  logger?: FastifyServerOptions['logger']
  /** A registered client the /demo page plays. */
  demo?: DemoClient
  /** The plugin's one clock, Unix ms (tests step it): expiries, graces, windows, nonce freshness. Default Date.now. */
  clock?: () => number
  /**
   * For the benchmark's ladder only (bench/ladder.ts): turns parts of the proxied requests' path
   * off, to measure what each costs. Never set in a deployment: with `macCheck` off nothing is checked.
   */
  hotPath?: HotPathParts
  /** Tracing, with its SDK started (`startTracing`); without it nothing of tracing is on a request's path. */
  tracing?: GatewayTracing
  /** Whether a request comes from a trusted proxy, whose trace context the request's span continues; default: none. */
  trustedPeer?: (request: FastifyRequest) => boolean
}

/** The parts of a proxied request's path the ladder turns off one by one; every one is on by default. */
export interface HotPathParts extends ProxyParts {
  requestMetrics?: boolean
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

/** The macgate service: the authorization server, and the open API behind MAC verification. */
export async function buildGateway ({ store, config: input = {}, secret, logger = false, demo, hotPath = {}, clock, tracing, trustedPeer }: GatewayOptions): Promise<FastifyInstance> {
  const config = parseConfig(input)
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
    keepAliveTimeout: config.clientTimeouts.keepAliveMs,
    requestTimeout: config.clientTimeouts.requestMs,
    http: { headersTimeout: config.clientTimeouts.headersMs, requestTimeout: config.clientTimeouts.requestMs, connectionsCheckingInterval: config.clientTimeouts.checkIntervalMs }
  })
  app.setErrorHandler(handleError)
  // First, so that every route (the plugin's too) has its hooks.
  if (tracing !== undefined) tracing.register(app, { ...config.tracing, ...(trustedPeer !== undefined && { trustedPeer }) })
  if (logger !== false) registerAccessLog(app, undefined, tracing === undefined ? undefined : (request) => tracing.idsOf(request))
  // While closing, a keep-alive connection is ended as soon as its last answer is out, so that
  // a client keeping it open cannot hold the shutdown (Fastify closes only those idle at the start).
  app.addHook('preClose', async () => {
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50).unref()
    app.server.once('close', () => clearInterval(sweep))
  })
  registerLanding(app, { routes: config.routes, demo: demo !== undefined })
  // The plugin's settings go through unchanged; the gateway keeps only where and what to proxy.
  const { upstream, routes, forwardMethodOverride, timeouts, upstreamPool, clientTimeouts, tracing: _tracing, ...settings } = config
  await app.register(macgate, { ...settings, store, ...(secret !== undefined && { secret }), ...(clock !== undefined && { clock }) })
  registerHealth(app, store)
  if (hotPath.requestMetrics !== false) registerRequestMetrics(app, app.macgate.metrics.requestDuration)
  if (logger !== false) logAuditEvents(app.macgate.events, app.log)
  if (tracing !== undefined) {
    tracing.observeStore(store, app.macgate.metrics)
    tracing.dropped.register(app.macgate.metrics.registry)
    app.macgate.events.on('audit', (event) => { tracing.watchAudit(event) })
  }
  await registerProxy(app, {
    upstream: upstream ?? await startSampleUpstream(app),
    routes,
    headerOptions: { forwardMethodOverride },
    timeouts,
    upstreamPool,
    logging: logger !== false,
    parts: hotPath,
    ...(tracing !== undefined && { tracing: tracing.proxy })
  })
  await registerDemo(app, demo)
  return app
}
