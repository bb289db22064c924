import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import type { MacgateContext } from '../config/options.ts'
import { errors } from '../http/errors.ts'
import { required, type Params } from '../http/params.ts'
import type { ClientRecord } from '../store/store.ts'
import { authenticateClient } from './client-auth.ts'
import { exchangeCode } from './grants/code.ts'
import { redeemDeviceCode } from './grants/device-code.ts'
import { DEVICE_CODE_GRANT } from '../access/grant-types.ts'
import { refreshTokens } from './grants/refresh.ts'
import { sendStandardError, sendStandardJson } from './standard-replies.ts'
import type { TokenEndpointCors } from '../cors/token-endpoint.ts'
import { TokenGrants } from './token-grants.ts'

/** Where RFC 6749 clients redeem codes and refresh tokens; the metadata's `token_endpoint`. */
export const STANDARD_TOKEN_PATH = '/oauth2/rfc/token'

/** How a client may authenticate here (RFC 8414 `token_endpoint_auth_methods_supported`); `none`: a public client. */
export const STANDARD_TOKEN_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none']

/**
 * The same grant functions as /oauth2/token, with RFC 6749's parameters: the code grant's
 * redirect_uri is required (§4.1.3: the authorization request always carries one here) and a
 * missing one is a malformed request, not a mismatch; a refresh carries none (§6).
 */
const GRANTS = new TokenGrants({
  authorization_code: async (config: MacgateContext, client: ClientRecord, params: Params) => {
    required(params, 'redirect_uri')
    return await exchangeCode(config, client, params)
  },
  refresh_token: async (config: MacgateContext, client: ClientRecord, params: Params) => await refreshTokens(config, client, params, { redirectUri: false }),
  // RFC 8628: a device's poll; no PKCE (contract §12), and no Xiaomi-dialect form (96006 there).
  [DEVICE_CODE_GRANT]: redeemDeviceCode
})

/**
 * The client, by `client_secret_basic` or `client_secret_post` (RFC 6749 §2.3.1) with the failure
 * throttle of every endpoint, or a public client by its client_id alone (`none`), whose code the
 * grant then redeems only with its PKCE verifier (contract §11).
 */
async function authenticate (config: MacgateContext, request: FastifyRequest, params: Params): Promise<ClientRecord> {
  return await authenticateClient(config, request, params, { allowPublic: true })
}

/**
 * The RFC 6749 token endpoint beside the Xiaomi one: POST with a form body only (§3.2; a secret
 * never rides in a URL), plain JSON without the `&&&START&&&` prefix, §5.2 errors. In order: the
 * grant type (no store read for a request no grant serves), the client, then the grant, whose
 * store operations are the Xiaomi endpoint's: a code is redeemed once across both endpoints, and a
 * replay on either revokes what it gave. Parameters a dialect does not define (`token_type`) are
 * ignored (§3.2). Counted in the same `macgate_token_requests_total` as /oauth2/token.
 */
export function standardTokenRoutes (fastify: FastifyInstance, config: MacgateContext, cors: TokenEndpointCors): void {
  // A browser app (a public client) calls it from its own origin, with CORS as at /oauth2/token (contract §11).
  const corsHooks = cors.hooks(config)
  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    const failure = GRANTS.refused(config, request, error, 'standard token endpoint failed')
    return await sendStandardError(reply, failure)
  })

  fastify.post(STANDARD_TOKEN_PATH, { ...corsHooks }, async (request, reply) => {
    const params = (request.body ?? {}) as Params
    const grantType = GRANTS.grantTypeOf(request, params)
    const client = await authenticate(config, request, params)
    return await sendStandardJson(reply, await GRANTS.issue(config, request, client, grantType, params))
  })

  fastify.route({
    method: ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'],
    url: STANDARD_TOKEN_PATH,
    ...corsHooks,
    handler: async (request, reply) => {
      // A public client's app may ask first; every other OPTIONS is a 405 like any other method.
      if (cors.allowsPreflight(request)) return await cors.sendPreflight(reply)
      reply.header('allow', 'POST')
      throw errors.methodNotAllowed('use POST with a form body')
    }
  })
}
