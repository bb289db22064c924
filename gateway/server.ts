import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import macgate, { type MacgateOptions } from '../plugin/index.js'

/** Request logs keep the path and drop the query: codes, secrets and tokens travel there. */
export const logSerializers = {
  req (request: { method: string, url: string, ip?: string }) {
    return { method: request.method, path: request.url.split('?')[0], ip: request.ip }
  }
}

export interface GatewayOptions extends MacgateOptions {
  logger?: FastifyServerOptions['logger']
}

/** The macgate service: the authorization server's endpoints and pages. */
export async function buildGateway ({ logger = false, ...options }: GatewayOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: logger === false ? false : { ...(typeof logger === 'object' ? logger : {}), serializers: logSerializers },
    // Never trust a client-supplied request id into the logs.
    requestIdHeader: false,
    return503OnClosing: true
  })
  await app.register(macgate, options)
  app.get('/healthz', async () => ({ status: 'ok' }))
  return app
}
