import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { createUser, registerClient } from '../../plugin/admin.js'
import { ScopeRegistry } from '../../plugin/oauth/scope.js'
import type { Store } from '../../plugin/store/store.js'
import { buildGateway } from '../server.js'
import { openStore } from '../stores.js'
import { UsageError } from './usage.js'

function portOf (value: string | undefined): number {
  const port = Number(value ?? 8080)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`PORT must be a port number, not ${value}`)
  return port
}

/** With the embedded store nothing exists yet: a demo client and user to walk the flow with. */
async function seedDemo (store: Store, origin: string): Promise<string> {
  const { client, clientSecret } = await registerClient(store, new ScopeRegistry(), {
    name: 'macgate demo',
    redirectUris: [`${origin}/demo/callback`],
    scope: '1 3 4 6'
  })
  const password = randomBytes(9).toString('base64url')
  await createUser(store, 'demo', password)
  return `Embedded store (no REDIS_URL): everything lives in this process.
  demo client  client_id=${client.id}  client_secret=${clientSecret}
               redirect_uri=${origin}/demo/callback
  demo user    username=demo  password=${password}
  try          ${origin}/oauth2/authorize?client_id=${client.id}&response_type=code&redirect_uri=${encodeURIComponent(`${origin}/demo/callback`)}&state=hello
`
}

export async function startCommand (args: string[]): Promise<void> {
  parseArgs({ args, options: {} })
  const port = portOf(process.env.PORT)
  const host = process.env.HOST ?? '127.0.0.1'
  const store = await openStore().catch((error: unknown) => {
    throw new UsageError(`cannot reach Redis at REDIS_URL (${(error as Error & { cause?: Error }).cause?.message ?? (error as Error).message})`)
  })
  const app = await buildGateway({ store, ...(process.env.MACGATE_SECRET !== undefined && { secret: process.env.MACGATE_SECRET }), logger: { level: process.env.LOG_LEVEL ?? 'info' } })
  app.addHook('onClose', async () => await store.close())
  const address = await app.listen({ port, host })
  const origin = address.replace('://0.0.0.0', '://127.0.0.1')
  if (store.kind === 'memory') process.stdout.write(await seedDemo(store, origin))

  // SIGTERM and SIGINT drain in-flight requests, then close the store.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      app.log.info({ signal }, 'shutting down')
      app.close().then(() => process.exit(0), () => process.exit(1))
    })
  }
}
