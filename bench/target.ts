// One server under test, in a process of its own so that it can be pinned to a core and its CPU
// time read apart from the load generator's. Started by bench/processes.ts with the kind to serve
// (a TargetKind of bench/messages.ts), the upstream URL, Redis's URL for the gateways on Redis (the
// cluster's seed nodes for gateway-cluster), and one or two more arguments: the mix's token LRU
// size, the shipped gateway's log file, or a ladder rung's step and log file. It sends `ready` once
// it listens, then answers the runner's messages: `cpu`, `count`, `counted`, and of a gateway
// `codes`, `cache`, `population`.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import fastifyHttpProxy from '@fastify/http-proxy'
import Fastify, { type FastifyInstance } from 'fastify'
import { buildAdminServer, buildGateway, logDestination, openStore, parseConfig, startTracing, tuneHeapForServing, UPSTREAM_POOL, withProcessMetrics } from '../gateway/index.ts'
import { grantAccessToken, grantCode, MemoryStore, RedisStore, registerClient, ScopeRegistry, type Store } from '../plugin/index.ts'
import { isGatewayKind, isRunnerMessage, type CacheStats, type GatewayKind, type Ready, type RunnerMessage, type TargetMessage } from './messages.ts'
import { RequestCounters } from './counters.ts'
import { AllocationSites } from './allocation-sites.ts'
import { createPopulation } from './population.ts'
import { isGatewayStep, partsOf, tracingEnv, type GatewayStep } from './rungs.ts'
import { buildLadderGateway } from './ladder-gateway.ts'

const [kind = 'upstream', upstream = '', redisUrl = '', option = '', logFile = ''] = process.argv.slice(2)
const counters = new RequestCounters()
const sites = new AllocationSites()
const REDIRECT_URI = 'https://bench.example/callback'
const USER_ID = 'bench-user'

/** A listening target: what it tells the runner, and (a gateway) how it makes codes and tokens. */
interface Served {
  ready: Ready
  codes?: (count: number) => Promise<string[]>
  cache?: () => Promise<CacheStats>
  /** Resolves to how long making the tokens took, ms. */
  population?: (count: number, file: string) => Promise<number>
}

function send (message: TargetMessage): void {
  process.send?.(message)
}

async function startUpstream (): Promise<number> {
  const body = JSON.stringify({ result: 'ok', description: 'success', data: { miliaoNick: 'bench' }, code: 0 })
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    response.end(body)
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

async function listen (app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as AddressInfo).port
}

/**
 * The baseline: a plain @fastify/http-proxy with the gateway's own upstream pool; the ladder's
 * first step up adds one empty callback onRequest hook (`withHook`), what every hook costs.
 */
async function buildPlainProxy (withHook = false): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  if (withHook) app.addHook('onRequest', function empty (_request, _reply, done) { done() })
  await app.register(fastifyHttpProxy, { upstream, undici: UPSTREAM_POOL })
  return app
}

/** Scenario 4q's route (README, "Quotas"): a quota so high it never refuses, counted on every request. */
const QUOTA_ROUTE = { path: '/quota/*', methods: ['GET'], scopes: ['1'], match: 'all' as const, quota: { perMinute: 1_000_000_000 } }

async function buildTarget (store: Store, lruMax: number): Promise<FastifyInstance> {
  return await buildGateway({
    store,
    config: { upstream, routes: [{ path: '/api/*', methods: ['GET'], scopes: ['1'], match: 'all' }, QUOTA_ROUTE], tokenCache: { max: lruMax, maxAgeMs: 300_000, negativeTtlMs: 10_000 } }
  })
}

/**
 * As `macgate start --config` builds it, up to the ladder's `step`: the config as a file with only
 * upstream and routes would give it; below the access-log step its logger at warn, from it on at its
 * default level, into a file; from the Redis step on, the store from the environment it reads; on a tracing step, the
 * SDK started from the standard variables as `macgate start` starts it, its spans sent to the
 * upstream's server (which answers any POST with 200: a collector that takes everything).
 */
async function buildRung (step: GatewayStep, log: string, prefix: string): Promise<{ app: FastifyInstance, store: Store }> {
  const { hotPath, log: logging, redis, tracing: traced } = partsOf(step)
  if (logging && log === '') throw new Error(`the ${step} rung needs a log file`)
  const tracing = traced === 'off' ? undefined : await startTracing(Object.assign(process.env, tracingEnv(traced, upstream)))
  const store = redis ? await openStore({ REDIS_URL: redisUrl, MACGATE_REDIS_PREFIX: prefix }) : new MemoryStore()
  const config = parseConfig({ upstream, routes: [{ path: '/api/*', methods: ['GET'], scopes: ['1'] }] })
  // Below the access-log step, the logger `LOG_LEVEL=warn` gives (no gateway runs without one, and
  // Fastify's work for a logged app, each response's listeners and the route's child logger, is the
  // app's, not its metrics'); at warn it writes nothing a request.
  const logger = { level: logging ? 'info' : 'warn', stream: logDestination(logging ? log : '/dev/null') }
  const app = await buildLadderGateway({ store, config, logger, ...(tracing !== undefined && { tracing }) }, hotPath)
  if (tracing !== undefined) app.addHook('onClose', async () => await tracing.shutdown())
  return { app, store }
}

/**
 * The gateway as `macgate start` ships: every part on, and Node's process metrics beside the
 * plugin's, served with the probes and the admin API by an admin listener on a port of its own.
 */
async function buildShipped (log: string): Promise<{ app: FastifyInstance, store: Store }> {
  const { app, store } = await buildRung('redis-nonces', log, 'bench:gateway-shipped:')
  const registry = withProcessMetrics(app.macgate.metrics.registry)
  const admin = await buildAdminServer({
    metrics: async () => ({ contentType: registry.contentType, text: await registry.metrics() }),
    store,
    api: { registry: app.macgate.registry, events: app.macgate.events },
    log: app.log
  })
  app.addHook('onClose', async () => await admin.close())
  await admin.listen({ port: 0, host: '127.0.0.1' })
  return { app, store }
}

async function buildKind (gateway: GatewayKind): Promise<{ app: FastifyInstance, store: Store }> {
  if (gateway === 'gateway-shipped') return await buildShipped(option)
  if (gateway === 'gateway-ladder') {
    if (!isGatewayStep(option)) throw new Error(`gateway-ladder needs a rung's step, not ${option}`)
    return await buildRung(option, logFile, `bench:gateway-ladder-${option}:`)
  }
  if (gateway === 'gateway-cluster') {
    // Here the Redis argument is the cluster's seed nodes, as REDIS_CLUSTER_NODES lists them.
    const store = await openStore({ REDIS_CLUSTER_NODES: redisUrl, MACGATE_REDIS_PREFIX: 'bench:gateway-cluster:' })
    return { app: await buildTarget(store, 100_000), store }
  }
  const store = gateway === 'gateway-memory' ? new MemoryStore() : await new RedisStore(redisUrl, { prefix: `bench:${gateway}:` }).connect()
  const lruMax = gateway === 'gateway-cold' ? 0 : gateway === 'gateway-mix' ? Number(option) : 100_000
  if (!Number.isSafeInteger(lruMax) || lruMax < 0) throw new Error(`${gateway} needs its token LRU's size, not ${option}`)
  return { app: await buildTarget(store, lruMax), store }
}

/** A gateway seeded through the plugin's package entry, as an operator would seed one. */
async function serveGateway (gateway: GatewayKind): Promise<Served> {
  const { app, store } = await buildKind(gateway)
  const port = await listen(app)
  const config = app.macgate
  const { client, clientSecret } = await registerClient(store, new ScopeRegistry(), { name: 'bench', redirectUris: [REDIRECT_URI], scope: '1 3' })
  const { accessToken, macKey } = await grantAccessToken(config, { clientId: client.id, userId: USER_ID, scope: ['1', '3'] })
  const code = async (): Promise<string> => await grantCode(config, { clientId: client.id, userId: USER_ID, scope: ['1'], redirectUri: REDIRECT_URI })
  return {
    ready: { type: 'ready', port, clientId: client.id, clientSecret, redirectUri: REDIRECT_URI, accessToken, macKey },
    // Saved as the authorize endpoint saves them, a thousand at a time: 40,000 sent at once would
    // queue past the store's 2 s command timeout on a slow machine (a 503 before the run begins).
    codes: async (count) => {
      const codes: string[] = []
      while (codes.length < count) codes.push(...await Promise.all(Array.from({ length: Math.min(1000, count - codes.length) }, code)))
      return codes
    },
    // Read as an operator reads them: from the gateway's Prometheus metrics, which every gateway here has on.
    cache: async () => await scrapeCache(app),
    population: async (count, file) => await createPopulation(config, count, file)
  }
}

/** The token cache's counters from the gateway's metrics text (what the admin listener's /metrics serves). */
async function scrapeCache (app: FastifyInstance): Promise<CacheStats> {
  const text = await app.macgate.metrics.registry.metrics()
  const read = (result: string): number => Number(new RegExp(`^macgate_token_cache_lookups_total\\{result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN)
  return { hits: read('hit'), misses: read('miss') }
}

async function serve (): Promise<Served> {
  if (kind === 'upstream') return { ready: { type: 'ready', port: await startUpstream() } }
  if (kind === 'proxy' || kind === 'proxy-hook') return { ready: { type: 'ready', port: await listen(await buildPlainProxy(kind === 'proxy-hook')) } }
  if (isGatewayKind(kind)) return await serveGateway(kind)
  throw new Error(`unknown target kind ${kind}`)
}

async function answer (message: RunnerMessage, served: Served): Promise<TargetMessage> {
  switch (message.type) {
    case 'cpu': {
      const usage = process.cpuUsage()
      return { type: 'cpu', micros: usage.user + usage.system }
    }
    case 'count':
      // Sampled in the pass without the promise hook only: its figures are the bytes.
      if (!message.promises) await sites.start()
      counters.start(message.promises)
      return { type: 'counting' }
    case 'counted': {
      const counts = counters.stop()
      await sites.stop(message.label, counts.bytes / Math.max(1, message.requests))
      return { type: 'counted', ...counts }
    }
    case 'codes':
      if (served.codes === undefined) return { type: 'error', message: `${kind} makes no codes` }
      return { type: 'codes', codes: await served.codes(message.count) }
    case 'cache':
      if (served.cache === undefined) return { type: 'error', message: `${kind} has no token LRU` }
      return { type: 'cache', ...await served.cache() }
    case 'population':
      if (served.population === undefined) return { type: 'error', message: `${kind} makes no tokens` }
      return { type: 'population', millis: await served.population(message.count, message.file) }
  }
}

async function main (): Promise<void> {
  // Every gateway here runs as `macgate start` runs it; the upstream and the plain proxy as Node starts.
  if (isGatewayKind(kind)) tuneHeapForServing()
  const served = await serve()
  process.on('message', (message) => {
    if (!isRunnerMessage(message)) return
    answer(message, served).then(send, (error: Error) => { send({ type: 'error', message: error.message }) })
  })
  send(served.ready)
}

// A clean exit on SIGTERM, so that `node --cpu-prof` writes its profile.
process.on('SIGTERM', () => process.exit(0))

/** Says why, then exits once the message is out: exiting at once could drop it. */
function fail (error: Error): void {
  const message: TargetMessage = { type: 'error', message: error.message }
  if (process.send === undefined) process.exit(1)
  process.send(message, undefined, {}, () => process.exit(1))
}

main().catch(fail)
