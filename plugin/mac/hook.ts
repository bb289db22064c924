import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { errors, toOAuthError, type OAuthError } from '../errors.js'
import type { MacIdentity, MacVerifier } from './verify.js'

export interface MacAuthOptions {
  /** Scopes the token must have been granted. */
  scopes?: string[]
  /** `all` (default): every one of `scopes`; `any`: at least one. */
  match?: 'all' | 'any'
}

/** An error in the open API's own shape, no `&&&START&&&` prefix. */
export function sendOpenApiError (reply: FastifyReply, error: OAuthError): FastifyReply {
  if (error.statusCode === 401) reply.header('www-authenticate', 'MAC')
  return reply.code(error.statusCode).send({ result: 'error', description: error.message, code: error.errno })
}

function granted (scope: string[], required: string[], match: 'all' | 'any'): boolean {
  if (required.length === 0) return true
  return match === 'any' ? required.some((item) => scope.includes(item)) : required.every((item) => scope.includes(item))
}

/**
 * An `onRequest` hook that admits only MAC-signed requests with the required scopes, before any
 * body is read; the caller's identity is left on `request.macIdentity`.
 */
export function macAuthHook (verifier: MacVerifier, { scopes = [], match = 'all' }: MacAuthOptions = {}): onRequestHookHandler {
  return async function macAuth (request: FastifyRequest, reply: FastifyReply) {
    let identity: MacIdentity
    try {
      identity = await verifier.verify({
        method: request.method,
        host: request.headers.host ?? '',
        url: request.url,
        authorization: request.headers.authorization
      })
    } catch (error) {
      const failure = toOAuthError(error)
      if (failure.statusCode >= 500) request.log.error({ err: error }, 'MAC verification failed')
      return await sendOpenApiError(reply, failure)
    }
    if (!granted(identity.scope, scopes, match)) {
      return await sendOpenApiError(reply, errors.accessDenied(`scope ${scopes.join(match === 'any' ? ' or ' : ' and ')} not granted`, 403))
    }
    request.macIdentity = identity
  }
}
