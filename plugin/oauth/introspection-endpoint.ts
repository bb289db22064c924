import type { FastifyInstance } from 'fastify'
import type { MacgateContext } from '../config/options.ts'
import { sendStandardJson } from './standard-replies.ts'
import { findToken, readTokenRequest } from './token-lookup.ts'

/**
 * RFC 7662 introspection for resource servers that do not sit behind the gateway: the client
 * authenticates, then a live access token is described (contract §10). A client sees only its own
 * tokens, unless registered as a resource server (`clients add --resource-server`); anything else,
 * refresh tokens included, is `{"active":false}`, which says nothing about why. A public client
 * has no secret to authenticate with: introspection is for resource servers (unauthorized_client).
 */
export function introspectionRoute (fastify: FastifyInstance, config: MacgateContext): void {
  fastify.post('/oauth2/introspect', async (request, reply) => {
    const { client, token } = await readTokenRequest(config, request, { allowPublic: false })
    const found = await findToken(config, token)
    if (found?.kind !== 'access' || (found.record.clientId !== client.id && client.resourceServer !== true)) {
      return await sendStandardJson(reply, { active: false })
    }
    const { record } = found
    return await sendStandardJson(reply, {
      active: true,
      scope: record.scope.join(' '),
      client_id: record.clientId,
      token_type: 'mac',
      exp: Math.floor(record.expiresAt / 1000),
      sub: record.openId
    })
  })
}
