import type { FastifyError, FastifyInstance } from 'fastify'
import type { MacgateContext } from '../config/options.js'
import { errors, toOAuthError } from '../core/errors.js'
import { introspectionRoute } from './introspection-endpoint.js'
import { metadataRoute } from './metadata-endpoint.js'
import { revocationRoute } from './revocation-endpoint.js'
import { sendStandardError } from './standard-replies.js'
import type { TokenEndpointCors } from './token-cors.js'

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
}
