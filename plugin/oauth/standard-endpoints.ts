import type { FastifyError, FastifyInstance } from 'fastify'
import type { MacgateContext } from '../config/options.ts'
import { errors, toOAuthError } from '../http/errors.ts'
import { introspectionRoute } from './introspection-endpoint.ts'
import { deviceAuthorizationRoute } from './device/authorization-endpoint.ts'
import { metadataRoute } from './metadata-endpoint.ts'
import { revocationRoute } from './revocation-endpoint.ts'
import { sendStandardError } from './standard-replies.ts'
import type { TokenEndpointCors } from '../cors/token-endpoint.ts'

/** The RFC endpoints beside the Xiaomi ones (contract §10), with their own error form. */
export function standardRoutes (fastify: FastifyInstance, config: MacgateContext, cors: TokenEndpointCors): void {
  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    const failure = toOAuthError(error)
    if (errors.internal.is(failure)) request.log.error({ err: error }, 'standard endpoint failed')
    return await sendStandardError(reply, failure)
  })
  metadataRoute(fastify, config)
  revocationRoute(fastify, config, cors)
  introspectionRoute(fastify, config)
  if (config.issuer !== undefined) deviceAuthorizationRoute(fastify, config, config.issuer.replace(/\/$/, ''))
}
