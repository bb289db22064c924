import cluster from 'node:cluster'
import { randomBytes } from 'node:crypto'
import { AuditEvents, createUser, defaultScopes, registerClient, ScopeRegistry, type Store } from '../../plugin/index.ts'
import { logAuditEvents } from '../access-log.ts'
import { loadConfig } from '../config.ts'
import { startDemoApp, type DemoApp } from '../demo/app-server.ts'
import type { DemoClient } from '../demo/routes.ts'
import { logDestination } from '../log-destination.ts'
import { buildGateway } from '../server.ts'
import { startTracing, tracingRefusal, tracingWanted } from '../tracing/switch.ts'
import { sharedStoreName } from '../stores.ts'
import { openCommandStore } from './admin-store.ts'
import type { CommandIO } from './io.ts'
import { OperatorError, parseCommand } from './usage.ts'
import { superviseWorkers, workerCount } from './workers.ts'
import { adminAddress, metricsOf, reportToPrimary, startAdminListener, withProcessMetrics } from './admin-listener.ts'
import type { FastifyInstance } from 'fastify'
import pino from 'pino'

function portOf (value: string | undefined): number {
  const port = Number(value ?? 8080)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new OperatorError(`PORT must be a port number, not ${value}`)
  return port
}

/**
 * With the embedded store nothing exists yet: a demo client and user to walk the flow with, and the
 * demo app's two public clients (code with PKCE, and the implicit grant) at its own origin.
 */
async function seedDemo (store: Store, origin: string, app: DemoApp): Promise<{ demo: DemoClient, banner: string }> {
  const redirectUri = `${origin}/demo/callback`
  const registry = new ScopeRegistry()
  const { client, clientSecret } = await registerClient(store, registry, { name: 'macgate demo', redirectUris: [redirectUri], scope: '1 3 4 6' })
  const appClient = { redirectUris: [`${app.origin}/`], scope: '1 3 4 6', public: true as const }
  const code = await registerClient(store, registry, { ...appClient, name: 'macgate demo app (code + PKCE)' })
  const implicit = await registerClient(store, registry, { ...appClient, name: 'macgate demo app (implicit)', responseTypes: ['token'] })
  app.configure({ gateway: origin, redirectUri: `${app.origin}/`, scope: '1 3 4 6', clients: { code: code.client.id, token: implicit.client.id } })
  const password = randomBytes(9).toString('base64url')
  await createUser(store, 'demo', password)
  const banner = `Embedded store (no REDIS_URL): everything lives in this process.
  demo page    ${origin}/demo
  demo app     ${app.origin}/  (an app without a server, on its own origin)
               its public clients: code+PKCE=${code.client.id}  implicit=${implicit.client.id}
  demo user    username=demo  password=${password}
  demo client  client_id=${client.id}  client_secret=${clientSecret}
               redirect_uri=${redirectUri}
`
  return { demo: { clientId: client.id, clientSecret, redirectUri }, banner }
}

/**
 * `macgate start`: settings from `env`, the demo's banner on `stdout`. The logs go to the
 * process's own descriptors (pino writes them there directly), and the workers of `--workers`
 * inherit the process's environment.
 */
export async function startCommand (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { values } = parseCommand('start', { args, options: { config: { type: 'string' }, workers: { type: 'string' } } })
  const workers = values.workers !== undefined ? workerCount(values.workers) : workerCount(env.MACGATE_WORKERS, 'MACGATE_WORKERS')
  const port = portOf(env.PORT)
  const host = env.HOST ?? '127.0.0.1'
  const admin = adminAddress(env)
  const config = await loadConfig(values.config, env).catch((error: unknown) => {
    throw new OperatorError((error as Error).message)
  })
  const refusal = tracingWanted(env) ? tracingRefusal(env) : undefined
  if (refusal !== undefined) throw new OperatorError(`tracing: ${refusal}`)
  if (workers > 1 && cluster.isPrimary) {
    // Checked once here, before any worker starts: each worker would only repeat the message.
    if (sharedStoreName(env) === undefined) {
      throw new OperatorError('--workers needs REDIS_URL or REDIS_CLUSTER_NODES: each worker is a process of its own, and the embedded store lives inside one process')
    }
    // The primary serves the admin listener, with every worker's metrics summed (prom-client's
    // AggregatorRegistry asks each worker over the cluster channel); it starts before any worker.
    if (admin !== undefined) {
      const store = await openCommandStore(env)
      const log = pino({ level: env.LOG_LEVEL ?? 'info' }, logDestination(2))
      // Operator actions are recorded in the primary's log; each worker logs its own requests' events.
      const events = new AuditEvents()
      logAuditEvents(events, log)
      const api = { registry: new ScopeRegistry(config.scopes ?? defaultScopes), events }
      await startAdminListener(admin, { metrics: metricsOf('workers'), store, api, log }).catch(async (error: unknown) => {
        await store.close()
        throw error
      })
    }
    return await superviseWorkers(workers)
  }
  // Each process that serves requests (each worker) starts its own SDK, before the gateway is built.
  const tracing = await startTracing(env)
  const store = await openCommandStore(env)
  // The demo's callback must be a loopback http URI (contract section 1).
  const loopback = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host
  const demoApp = store.kind === 'memory' && port !== 0 && ['127.0.0.1', 'localhost', '::1'].includes(loopback)
    ? await startDemoApp(loopback)
    : undefined
  const seeded = demoApp === undefined
    ? undefined
    : await seedDemo(store, `http://${loopback.includes(':') ? `[${loopback}]` : loopback}:${port}`, demoApp)
  const app = await buildGateway({
    store,
    // The embedded demo is for trying things out: a mismatched signature shows what the server signed.
    config: seeded === undefined ? config : { ...config, macDebug: true },
    ...(env.MACGATE_SECRET !== undefined && { secret: env.MACGATE_SECRET }),
    ...(seeded !== undefined && { demo: seeded.demo }),
    logger: { level: env.LOG_LEVEL ?? 'info', stream: logDestination() },
    ...(tracing !== undefined && { tracing })
  }).catch(async (error: unknown) => {
    await demoApp?.close()
    await tracing?.shutdown()
    throw error
  })
  app.addHook('onClose', async () => await store.close())
  // The spans still queued go out on the way down (within the exporter's timeout).
  if (tracing !== undefined) app.addHook('onClose', async () => await tracing.shutdown())
  if (demoApp !== undefined) app.addHook('onClose', demoApp.close)
  try {
    await app.listen({ port, host })
  } catch (error) {
    // Close what was opened (the sample API's socket, Redis), so that the process exits now.
    await app.close()
    throw new OperatorError(`cannot listen on ${host}:${port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  const registry = withProcessMetrics(app.macgate.metrics.registry)
  let adminListener: FastifyInstance | undefined
  if (cluster.isWorker) reportToPrimary(registry)
  else if (admin !== undefined) {
    const api = { registry: app.macgate.registry, events: app.macgate.events, clock: app.macgate.clock }
    adminListener = await startAdminListener(admin, { metrics: metricsOf(registry), store, api, log: app.log }).catch(async (error: unknown) => {
      await app.close()
      throw error
    })
  }
  if (seeded !== undefined) stdout.write(seeded.banner)

  // SIGTERM and SIGINT drain in-flight requests, then close the store.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      app.log.info({ signal }, 'shutting down')
      Promise.all([adminListener?.close(), app.close()]).then(() => process.exit(0), () => process.exit(1))
    })
  }
}
