// What the gateway answers for a failure outside the plugin's own handlers (an unknown path or
// method, a URL the router cannot read, a fault in a route of ours), in the form the path's
// callers read: the token endpoint's body, a page, or the open API's JSON.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { errors, pathAndQuery, SECURITY_HEADERS, sendErrorPage, sendOpenApiError, sendTokenError, toOAuthError, type OAuthError } from '../../plugin/index.ts'

export async function sendFailure (request: FastifyRequest, reply: FastifyReply, failure: OAuthError): Promise<FastifyReply> {
  const { path } = pathAndQuery(request)
  if (path === '/oauth2/token') return await sendTokenError(reply, failure)
  if (path.startsWith('/oauth2/') || path === '/demo' || path.startsWith('/demo/')) return await sendErrorPage(reply.headers(SECURITY_HEADERS), failure)
  return await sendOpenApiError(reply, failure)
}

/** Fastify's error handler for the gateway's own routes: a fault is logged with its stack, answered without it. */
export async function handleError (error: unknown, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const failure = toOAuthError(error)
  if (errors.internal.is(failure)) request.log.error({ err: error }, 'request failed')
  else if (failure.statusCode >= 500) request.log.warn({ reason: failure.message }, 'request failed')
  return await sendFailure(request, reply, failure)
}

/** Errors the router raises before any route or hook (a bad percent-escape in the path). */
export function frameworkErrors (_error: Error, request: FastifyRequest, reply: FastifyReply): void {
  void sendFailure(request, reply, errors.invalidRequest('the request path is not valid percent-encoded UTF-8'))
}
