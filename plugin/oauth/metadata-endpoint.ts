import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { MacgateContext } from '../config/options.ts'
import { sendStandardJson } from './standard-replies.ts'
import { STANDARD_TOKEN_AUTH_METHODS, STANDARD_TOKEN_PATH } from './standard-token-endpoint.ts'
import { deviceGrantTypes, deviceMetadata } from './device/metadata.ts'

const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post']
/** A public client sends its client_id alone (RFC 7591's `none`), at the token and revocation endpoints. */
const WITH_PUBLIC = [...CLIENT_AUTH_METHODS, 'none']

/**
 * The configured issuer, or else the address this request reached us on: the listening address,
 * not the Host header, which any client may set (and an HTTP/1.0 request may leave out).
 */
export function issuerOf (config: MacgateContext, request: FastifyRequest): string {
  if (config.issuer !== undefined) return config.issuer.replace(/\/$/, '')
  const { localAddress = '127.0.0.1', localPort = 80 } = request.socket
  const host = localAddress.includes(':') ? `[${localAddress}]` : localAddress
  return `${request.protocol}://${host}:${localPort}`
}

/** RFC 8414: what a generic client discovers before it starts. */
export function metadataRoute (fastify: FastifyInstance, config: MacgateContext): void {
  fastify.get('/.well-known/oauth-authorization-server', async (request, reply) => {
    const issuer = issuerOf(config, request)
    return await sendStandardJson(reply, {
      issuer,
      authorization_endpoint: `${issuer}/oauth2/authorize`,
      token_endpoint: `${issuer}${STANDARD_TOKEN_PATH}`,
      revocation_endpoint: `${issuer}/oauth2/revoke`,
      introspection_endpoint: `${issuer}/oauth2/introspect`,
      // Only where developers may register (contract §12): a client that finds it may use it.
      ...(config.registration.mode !== 'off' && { registration_endpoint: `${issuer}/oauth2/register` }),
      response_types_supported: ['code', 'token'],
      grant_types_supported: ['authorization_code', 'implicit', 'refresh_token', ...deviceGrantTypes(config)],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: STANDARD_TOKEN_AUTH_METHODS,
      revocation_endpoint_auth_methods_supported: WITH_PUBLIC,
      introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
      scopes_supported: config.registry.ids(),
      ...deviceMetadata(config, issuer)
    })
  })
}
