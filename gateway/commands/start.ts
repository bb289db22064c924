import cluster from 'node:cluster'
import { resolve } from 'node:path'
import { randomBytes } from 'node:crypto'
import { AuditEvents, createUser, defaultScopes, DEVICE_CODE_GRANT, registerClient, ScopeRegistry, type Store } from '../../plugin/index.ts'
import { logAuditEvents } from '../operator/access-log.ts'
import { loadConfig, type GatewayConfig } from '../config/gateway-config.ts'
import { drainAndClose } from '../edge/drain.ts'
import type { ReloadAnswer } from '../operator/reload.ts'
import { adminAnswer, answerPrimary, forwardSighup, reloadWorkers } from './reloads.ts'
import { startDemoApp, type DemoApp } from '../site/demo/app-server.ts'
import type { DemoClient } from '../site/demo/routes.ts'
import { logDestination } from '../operator/log-destination.ts'
import { buildGateway } from '../assembly/build-gateway.ts'
import { tuneHeapForServing } from '../assembly/heap-tuning.ts'
import { startTracing, tracingRefusal, tracingWanted } from '../operator/tracing/switch.ts'
import { sharedStoreName } from '../assembly/stores.ts'
import { openCommandStore } from './command-store.ts'
import type { CommandIO } from './io.ts'
import { OperatorError, parseCommand, UsageError } from './usage.ts'
import { superviseWorkers, workerCount } from './workers.ts'
import { configLabels, TlsCertificates, TlsFileError } from '../edge/tls.ts'
import { adminAddress, metricsOf, reportToPrimary, startAdminListener, withProcessMetrics } from './start-admin-listener.ts'
import type { FastifyInstance } from 'fastify'
import pino from 'pino'

function portOf (value: string | undefined): number {
  const port = Number(value ?? 8080)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new OperatorError(`PORT must be a port number, not ${value}`)
  return port
}

/**
 * With the embedded store nothing exists yet: a demo client and user to walk the flow with, and the
 * demo app's two public clients (code with PKCE, and the implicit grant) at its own origin, and a
 * public device client for `macgate login` (the device grant, on the demo's issuer: its origin).
 */
async function seedDemo (store: Store, origin: string, app: DemoApp): Promise<{ demo: DemoClient, banner: string, issuer: string }> {
  const redirectUri = `${origin}/demo/callback`
  const registry = new ScopeRegistry()
  const { client, clientSecret } = await registerClient(store, registry, { name: 'macgate demo', redirectUris: [redirectUri], scope: '1 3 4 6' })
  const appClient = { redirectUris: [`${app.origin}/`], scope: '1 3 4 6', public: true as const }
  const code = await registerClient(store, registry, { ...appClient, name: 'macgate demo app (code + PKCE)' })
  const implicit = await registerClient(store, registry, { ...appClient, name: 'macgate demo app (implicit)', responseTypes: ['token'] })
  const device = await registerClient(store, registry, { name: 'macgate demo device', redirectUris: [redirectUri], scope: '1 3 4 6', public: true, grantTypes: [DEVICE_CODE_GRANT] })
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
  demo device  macgate login --issuer ${origin} --client-id ${device.client.id}
`
  return { demo: { clientId: client.id, clientSecret, redirectUri }, banner, issuer: origin }
}

/**
 * The certificates of `--tls-cert` and `--tls-key` (both or neither; relative to the working
 * directory; they replace the config's `tls`), else of the config's `tls`, read and checked.
 */
async function loadCertificates (cert: string | undefined, key: string | undefined, config: GatewayConfig): Promise<TlsCertificates | undefined> {
  if ((cert === undefined) !== (key === undefined)) throw new UsageError(`start: ${cert === undefined ? '--tls-key needs --tls-cert' : '--tls-cert needs --tls-key'}`)
  const [files, labels] = cert !== undefined && key !== undefined
    ? [[{ cert: resolve(cert), key: resolve(key) }], [{ cert: '--tls-cert', key: '--tls-key' }]]
    : config.tls === undefined ? [undefined, []] : [config.tls, configLabels(config.tls.length)]
  if (files === undefined) return undefined
  // The flags win over the file: the gateway takes these, not the config's.
  config.tls = files
  return await TlsCertificates.load(files, labels).catch((error: unknown) => {
    throw error instanceof TlsFileError ? new OperatorError(error.message) : error
  })
}

/**
 * `macgate start`: settings from `env`, the demo's banner on `stdout`. The logs go to the
 * process's own descriptors (pino writes them there directly), and the workers of `--workers`
 * inherit the process's environment.
 */
export async function startCommand (args: string[], { env, stdout }: CommandIO): Promise<void> {
  // First, before the process allocates much: V8 reads them at each young collection.
  const heapTuning = tuneHeapForServing()
  const { values } = parseCommand('start', { args, options: { config: { type: 'string' }, workers: { type: 'string' }, 'tls-cert': { type: 'string' }, 'tls-key': { type: 'string' } } })
  const workers = values.workers !== undefined ? workerCount(values.workers) : workerCount(env.MACGATE_WORKERS, 'MACGATE_WORKERS')
  const port = portOf(env.PORT)
  const host = env.HOST ?? '127.0.0.1'
  const admin = adminAddress(env)
  // The file as read at the start and at each reload; the environment's settings win both times.
  const readConfig = async (): Promise<GatewayConfig> => await loadConfig(values.config, env)
  const config = await readConfig().catch((error: unknown) => {
    throw new OperatorError((error as Error).message)
  })
  // Read here, before any worker starts, so that a bad file fails the start with its name; each worker reads them again.
  const tls = await loadCertificates(values['tls-cert'], values['tls-key'], config)
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
      await startAdminListener(admin, { metrics: metricsOf('workers'), store, api, log, reload: async () => await reloadWorkers(readConfig) }).catch(async (error: unknown) => {
        await store.close()
        throw error
      })
    }
    forwardSighup()
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
    : await seedDemo(store, `${tls === undefined ? 'http' : 'https'}://${loopback.includes(':') ? `[${loopback}]` : loopback}:${port}`, demoApp)
  // The embedded demo is for trying things out: a mismatched signature shows what the server signed.
  // Its issuer is the demo's origin unless configured: the device grant needs one.
  const demoSettings = (read: GatewayConfig): GatewayConfig => seeded === undefined ? read : { ...read, macDebug: true, issuer: read.issuer ?? seeded.issuer }
  const app = await buildGateway({
    store,
    ...(tls !== undefined && { tls }),
    config: demoSettings(config),
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
  const reload = async (): Promise<ReloadAnswer> => await app.configReload.reload(async () => demoSettings(await readConfig()))
  // SIGHUP re-reads the config file and the TLS files (under workers, the primary sends it to each
  // worker); listened for before the port opens, so that no SIGHUP ends the process meanwhile.
  process.on('SIGHUP', () => { void reload() })
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
  app.log.info(heapTuning, 'V8 tuned for serving: page promotion and allocation-site pretenuring off unless node was started with either (README, "Running at scale")')
  const registry = withProcessMetrics(app.macgate.metrics.registry)
  let adminListener: FastifyInstance | undefined
  if (cluster.isWorker) {
    reportToPrimary(registry)
    answerPrimary(reload)
  } else if (admin !== undefined) {
    const api = { registry: app.macgate.registry, events: app.macgate.events, clock: app.macgate.clock }
    adminListener = await startAdminListener(admin, { metrics: metricsOf(registry), store, api, log: app.log, reload: async () => adminAnswer(await reload()), drain: app.drain }).catch(async (error: unknown) => {
      await app.close()
      throw error
    })
  }
  if (seeded !== undefined) stdout.write(seeded.banner)

  // SIGTERM and SIGINT drain (drain.ts), then close the store; the admin listener serves to the end.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      const { drainDelayMs, drainMs } = app.configReload.current
      app.log.info({ signal, drainDelayMs, drainMs }, 'shutting down')
      drainAndClose(app, { drainDelayMs, drainMs })
        .then(async () => await adminListener?.close())
        .then(() => process.exit(0), (error: unknown) => {
          app.log.error({ err: error }, 'shutdown failed')
          process.exit(1)
        })
    })
  }
}
