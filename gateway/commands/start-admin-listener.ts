import cluster from 'node:cluster'
import { AggregatorRegistry, type Registry } from 'prom-client'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { Store } from '../../plugin/index.ts'
import { buildAdminServer, isLoopback, type AdminServerOptions } from '../operator/admin-listener.ts'
export { withProcessMetrics } from '../operator/admin-listener.ts'
import { OperatorError } from './usage.ts'

export interface AdminAddress { port: number, host: string, token?: string }

/**
 * Where the admin listener goes: `ADMIN_PORT` (default 8081; `off` for none) on `ADMIN_HOST`
 * (default 127.0.0.1). Without `MACGATE_ADMIN_TOKEN` it may listen on a loopback address only:
 * an unauthenticated admin API reachable from the network is refused before anything starts.
 */
export function adminAddress (env: NodeJS.ProcessEnv = process.env): AdminAddress | undefined {
  const value = env.ADMIN_PORT ?? '8081'
  if (value === 'off') return undefined
  const port = Number(value)
  if (value === '' || !Number.isInteger(port) || port < 0 || port > 65535) throw new OperatorError(`ADMIN_PORT must be a port number or off, not ${value}`)
  const host = env.ADMIN_HOST ?? '127.0.0.1'
  const token = env.MACGATE_ADMIN_TOKEN === '' ? undefined : env.MACGATE_ADMIN_TOKEN
  if (token === undefined && !isLoopback(host)) {
    throw new OperatorError(`ADMIN_HOST ${host} is not a loopback address: set MACGATE_ADMIN_TOKEN to require a bearer token there, or keep the admin listener on 127.0.0.1`)
  }
  return { port, host, ...(token !== undefined && { token }) }
}

/** A worker of `start --workers` answers the primary's metrics requests with this registry. */
export function reportToPrimary (registry: Registry): void {
  AggregatorRegistry.setRegistries([registry])
  // Its constructor is what makes a worker answer the primary's requests (prom-client adds the listener there).
  new AggregatorRegistry() // eslint-disable-line no-new
}

/** The metrics one process serves: its own registry, or (the primary of workers) all workers' summed. */
export function metricsOf (registry: Registry | 'workers'): () => Promise<{ contentType: string, text: string }> {
  if (registry !== 'workers') return async () => ({ contentType: registry.contentType, text: await registry.metrics() })
  if (!cluster.isPrimary) throw new Error('only the primary aggregates its workers')
  const aggregator = new AggregatorRegistry()
  return async () => ({ contentType: aggregator.contentType, text: await aggregator.clusterMetrics() })
}

/** Starts the admin listener; a busy port or bad host ends the start, as the public port's would. */
export async function startAdminListener (address: AdminAddress, options: { metrics: ReturnType<typeof metricsOf>, store: Store, api: NonNullable<AdminServerOptions['api']>, log: FastifyBaseLogger } & Pick<AdminServerOptions, 'reload' | 'drain'>): Promise<FastifyInstance> {
  const admin = await buildAdminServer({ ...options, ...(address.token !== undefined && { token: address.token }) })
  try {
    await admin.listen({ port: address.port, host: address.host })
  } catch (error) {
    await admin.close()
    throw new OperatorError(`cannot listen on ${address.host}:${address.port} (ADMIN_PORT): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  const { port } = admin.server.address() as { port: number }
  options.log.info({ admin: `http://${address.host.includes(':') ? `[${address.host}]` : address.host}:${port}`, token: address.token !== undefined }, 'admin listener')
  return admin
}
