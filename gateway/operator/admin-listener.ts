import { createHash, timingSafeEqual } from 'node:crypto'
import { collectDefaultMetrics, type Registry } from 'prom-client'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { splitPathAndQuery, type Store } from '../../plugin/index.ts'
import { adminApi, type AdminApiOptions } from './admin-api.ts'
import { registerProbes } from './health.ts'
import type { Drain } from '../edge/drain.ts'

export interface AdminServerOptions {
  /** The Prometheus exposition of this process (or, under workers, of all of them). */
  metrics: () => Promise<{ contentType: string, text: string }>
  /** Readiness asks this store. */
  store: Store
  /** When set, every request needs `Authorization: Bearer <token>`. */
  token?: string
  /** The admin API's registry and audit trail; without them, no `/admin` routes. */
  api?: Omit<AdminApiOptions, 'store'>
  /** Where the listener logs refused requests and failures (the gateway's logger); none by default. */
  log?: FastifyBaseLogger
  /** POST /admin/reload: re-reads the gateway config (commands/reloads.ts); without it, no such route. */
  reload?: () => Promise<{ status: number, body: unknown }>
  /** Readiness answers 503 once the process drains. */
  drain?: Drain
}

/** Node's process metrics (`macgate_process_*`, `macgate_nodejs_*`) beside the plugin's, once per process. */
export function withProcessMetrics (registry: Registry): Registry {
  collectDefaultMetrics({ register: registry, prefix: 'macgate_' })
  return registry
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest()

/** A bearer check in constant time: both sides hashed first, so that neither length nor content leaks. */
function bearerCheck (token: string) {
  const expected = digest(token)
  return async function requireToken (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization ?? ''
    const presented = header.startsWith('Bearer ') ? header.slice(7) : ''
    if (timingSafeEqual(digest(presented), expected) && presented !== '') return
    request.log.warn({ path: splitPathAndQuery(request.url).path, ip: request.ip }, 'admin request without the right bearer token')
    await reply.code(401).header('www-authenticate', 'Bearer realm="macgate-admin"').send({ error: 'unauthorized', message: 'this listener needs Authorization: Bearer <MACGATE_ADMIN_TOKEN>' })
  }
}

/**
 * The admin listener: operators' endpoints on a port of their own (as Kong's status API and Hydra's
 * admin port), never on the public one. Metrics, the health probes, and the admin API.
 */
export async function buildAdminServer ({ metrics, store, token, api, log, reload, drain }: AdminServerOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(log !== undefined && { loggerInstance: log }),
    // Scrapes and probes every few seconds would drown the log; operator actions are audit events.
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    // Strict bodies: an unknown or mistyped field is a 400, never dropped or coerced.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } }
  })
  if (token !== undefined) app.addHook('onRequest', bearerCheck(token))
  app.get('/metrics', async (_request, reply) => {
    const { contentType, text } = await metrics()
    return await reply.header('content-type', contentType).send(text)
  })
  registerProbes(app, store, drain)
  if (reload !== undefined) {
    app.post('/admin/reload', async (_request, reply) => {
      const { status, body } = await reload()
      return await reply.code(status).send(body)
    })
  }
  if (api !== undefined) await app.register(async (context) => { await adminApi(context, { store, ...api }) })
  return app
}

/** Loopback names: the only hosts an admin listener without a token may bind to. */
export function isLoopback (host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
}
