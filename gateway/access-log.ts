// One structured line per request at the default level, instead of Fastify's two and the proxy
// client's two: what an operator needs per request; anything more comes from the metrics.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { pathOf } from './request-path.js'

/**
 * Logs method, path (never the query: codes and secrets travel there), status, latency, the
 * verified client and, for a refused request, why. Written through the root logger, so that a
 * route whose own level is quieter (the proxy's) still gets its line.
 */
export function registerAccessLog (app: FastifyInstance): void {
  const log = app.log
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    log.info({
      method: request.method,
      path: pathOf(request.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
      ...(request.macIdentity !== null && { client: request.macIdentity.clientId }),
      ...(request.macRejection !== null && { reason: request.macRejection })
    }, 'request')
  })
}
