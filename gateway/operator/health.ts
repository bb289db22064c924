import type { FastifyInstance } from 'fastify'
import type { StoreLifecycle } from '../../plugin/index.ts'
import type { Drain } from '../edge/drain.ts'

/** What readiness reports: the store's state, and how long its answer took. */
export interface Readiness {
  status: 'ready' | 'unavailable'
  store: { kind: string, status: 'up' | 'down', ms?: number, error?: string }
}

/** Asks the store once (a PING to Redis); never throws, so that a probe always gets a body. */
export async function readiness (store: StoreLifecycle): Promise<Readiness> {
  const started = performance.now()
  try {
    await store.ping()
    return { status: 'ready', store: { kind: store.kind, status: 'up', ms: Math.round((performance.now() - started) * 100) / 100 } }
  } catch (error) {
    const cause = (error as { cause?: Error }).cause?.message ?? (error as Error).message
    return { status: 'unavailable', store: { kind: store.kind, status: 'down', error: cause } }
  }
}

/**
 * Load-balancer probes: `/health/live` answers while the process serves; `/health/ready` only while
 * the store answers (503 with what is down otherwise), so that a balancer stops sending requests
 * that could only be refused, and sends them again by itself once the store is back (every probe
 * asks anew), and 503 from the moment the process starts draining. On the public port and the
 * admin listener alike.
 */
export function registerProbes (app: FastifyInstance, store: StoreLifecycle, drain?: Drain): void {
  app.get('/health/live', async () => ({ status: 'live' }))
  app.get('/health/ready', async (_request, reply) => {
    // Stopping (SIGTERM, drain.ts): a balancer must stop sending, whatever the store says.
    if (drain?.draining === true) return await reply.code(503).header('cache-control', 'no-store').send({ status: 'draining' })
    const state = await readiness(store)
    return await reply.code(state.status === 'ready' ? 200 : 503).header('cache-control', 'no-store').send(state)
  })
}

/** The public port's probes: the two above, and `/healthz`, the first version's, answered as it always was. */
export function registerHealth (app: FastifyInstance, store: StoreLifecycle, drain?: Drain): void {
  registerProbes(app, store, drain)
  app.get('/healthz', async () => ({ status: 'ok' }))
}
