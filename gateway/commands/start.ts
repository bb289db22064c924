import cluster from 'node:cluster'
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { createUser, registerClient, ScopeRegistry, type Store } from '../../plugin/index.js'
import { loadConfig } from '../config.js'
import type { DemoClient } from '../demo/routes.js'
import { logDestination } from '../log-destination.js'
import { buildGateway } from '../server.js'
import { sharedStoreName } from '../stores.js'
import { openCommandStore } from './admin-store.js'
import { UsageError } from './usage.js'
import { superviseWorkers, workerCount } from './workers.js'

function portOf (value: string | undefined): number {
  const port = Number(value ?? 8080)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`PORT must be a port number, not ${value}`)
  return port
}

/** With the embedded store nothing exists yet: a demo client and user to walk the flow with. */
async function seedDemo (store: Store, origin: string): Promise<{ demo: DemoClient, banner: string }> {
  const redirectUri = `${origin}/demo/callback`
  const { client, clientSecret } = await registerClient(store, new ScopeRegistry(), { name: 'macgate demo', redirectUris: [redirectUri], scope: '1 3 4 6' })
  const password = randomBytes(9).toString('base64url')
  await createUser(store, 'demo', password)
  const banner = `Embedded store (no REDIS_URL): everything lives in this process.
  demo page    ${origin}/demo
  demo user    username=demo  password=${password}
  demo client  client_id=${client.id}  client_secret=${clientSecret}
               redirect_uri=${redirectUri}
`
  return { demo: { clientId: client.id, clientSecret, redirectUri }, banner }
}

export async function startCommand (args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { config: { type: 'string' }, workers: { type: 'string' } } })
  const workers = workerCount(values.workers ?? process.env.MACGATE_WORKERS)
  const port = portOf(process.env.PORT)
  const host = process.env.HOST ?? '127.0.0.1'
  const config = await loadConfig(values.config).catch((error: unknown) => {
    throw new UsageError((error as Error).message)
  })
  if (workers > 1 && cluster.isPrimary) {
    // Checked once here, before any worker starts: each worker would only repeat the message.
    if (sharedStoreName() === undefined) {
      throw new UsageError('--workers needs REDIS_URL or REDIS_CLUSTER_NODES: each worker is a process of its own, and the embedded store lives inside one process')
    }
    return await superviseWorkers(workers)
  }
  const store = await openCommandStore()
  // The demo's callback must be a loopback http URI (contract section 1).
  const loopback = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host
  const seeded = store.kind === 'memory' && port !== 0 && ['127.0.0.1', 'localhost', '::1'].includes(loopback)
    ? await seedDemo(store, `http://${loopback.includes(':') ? `[${loopback}]` : loopback}:${port}`)
    : undefined
  const app = await buildGateway({
    store,
    // The embedded demo is for trying things out: a mismatched signature shows what the server signed.
    config: seeded === undefined ? config : { ...config, macDebug: true },
    ...(process.env.MACGATE_SECRET !== undefined && { secret: process.env.MACGATE_SECRET }),
    ...(seeded !== undefined && { demo: seeded.demo }),
    logger: { level: process.env.LOG_LEVEL ?? 'info', stream: logDestination() }
  })
  app.addHook('onClose', async () => await store.close())
  try {
    await app.listen({ port, host })
  } catch (error) {
    // Close what was opened (the sample API's socket, Redis), so that the process exits now.
    await app.close()
    throw new UsageError(`cannot listen on ${host}:${port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  if (seeded !== undefined) process.stdout.write(seeded.banner)

  // SIGTERM and SIGINT drain in-flight requests, then close the store.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      app.log.info({ signal }, 'shutting down')
      app.close().then(() => process.exit(0), () => process.exit(1))
    })
  }
}
