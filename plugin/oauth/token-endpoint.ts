import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import { errors } from '../http/errors.ts'
import { sendTokenBody, sendTokenError } from '../http/replies.ts'
import type { MacgateContext } from '../config/options.ts'
import { authenticateClient, usesBasicAuth } from './client-auth.ts'
import { exchangeCode } from './grants/code.ts'
import { refreshTokens } from './grants/refresh.ts'
import type { TokenEndpointCors } from '../cors/token-endpoint.ts'
import { TokenGrants } from './token-grants.ts'
import { parseForm, single, type Params } from '../http/params.ts'
import { pathAndQuery } from '../http/path-and-query.ts'

const GRANTS = new TokenGrants({ authorization_code: exchangeCode, refresh_token: refreshTokens })

/** GET (the spec) takes the query; POST (RFC 6749) the form body, plus a query without overlap. */
function paramsOf (request: FastifyRequest): Params {
  const query = parseForm(pathAndQuery(request).query)
  if (request.method === 'GET') return query
  const body = (request.body ?? {}) as Params
  const both = Object.keys(body).find((name) => name in query)
  if (both !== undefined) throw errors.invalidRequest(`${both} is repeated`)
  return { ...query, ...body }
}

/** /oauth2/token: client authentication, then the grant's handler; every body `&&&START&&&`-prefixed. */
export function tokenRoutes (fastify: FastifyInstance, config: MacgateContext, cors: TokenEndpointCors): void {
  const corsHooks = cors.hooks(config)
  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    const failure = GRANTS.refused(config, request, error, 'token endpoint failed')
    const status = config.tokenErrorStatus ?? failure.statusCode
    if (status === 401 && usesBasicAuth(request)) reply.header('www-authenticate', 'Basic realm="macgate"')
    return await sendTokenError(reply, failure, status)
  })

  fastify.route({
    method: ['GET', 'POST'],
    url: '/oauth2/token',
    // A HEAD would run the GET handler: spend the code and throw the token set away.
    exposeHeadRoute: false,
    ...corsHooks,
    handler: async (request, reply) => {
      const params = paramsOf(request)
      const grantType = GRANTS.grantTypeOf(request, params)
      const tokenType = single(params, 'token_type')
      if (tokenType !== undefined && tokenType !== 'mac') throw errors.invalidRequest('token_type must be mac')
      const client = await authenticateClient(config, request, params)
      // The GET form is the spec's, for its confidential SDKs: a browser app posts (RFC 6749 §3.2).
      if (client.public === true && request.method !== 'POST') throw errors.invalidRequest('a public client uses POST')
      return await sendTokenBody(reply, await GRANTS.issue(config, request, client, grantType, params))
    }
  })

  fastify.route({
    method: ['HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'],
    url: '/oauth2/token',
    ...corsHooks,
    handler: async (request, reply) => {
      // A public client's app may ask first (contract §11); every other OPTIONS stays 405 (§9).
      if (cors.allowsPreflight(request)) return await cors.sendPreflight(reply)
      reply.header('allow', 'GET, POST')
      throw errors.methodNotAllowed('use GET or POST')
    }
  })
}
