import type { FastifyInstance } from 'fastify'
import type { MacgateContext } from '../config/options.ts'
import { single } from '../http/params.ts'
import { sendStandardJson } from './standard-replies.ts'
import { findToken, readTokenRequest } from './token-lookup.ts'
import { servedClient, type TokenEndpointCors } from '../cors/token-endpoint.ts'

/**
 * RFC 7009 revocation, in this order: the client authenticates (as at the token endpoint, a
 * public client by its client_id alone, RFC 7009 §5), the
 * token is required, then it is looked up. Revoking either token of a grant revokes the whole
 * grant (for a refresh token the contract requires it; for an access token RFC 7009 allows it, and
 * a client revoking its access does not mean to keep refreshing it). The revoking script announces
 * it, so every gateway instance drops the access token from its cache. 200 whatever was found: an
 * unknown, expired or other client's token tells the caller nothing, and another client's is left
 * alone. A public client's app may call it from its origin (CORS as at the token endpoint).
 */
export function revocationRoute (fastify: FastifyInstance, config: MacgateContext, cors: TokenEndpointCors): void {
  fastify.post('/oauth2/revoke', { ...cors.hooks(config) }, async (request, reply) => {
    const { client, token, params } = await readTokenRequest(config, request, { allowPublic: true })
    servedClient(request, client)
    const found = await findToken(config, token, single(params, 'token_type_hint'))
    if (found !== undefined && found.record.clientId === client.id) {
      await config.store.revokeGrant(found.grantId)
      config.events.record('grant.revoked', { grantId: found.grantId, clientId: client.id, by: 'client' })
    }
    return await sendStandardJson(reply, {})
  })
}
