import type { FastifyReply, FastifyRequest } from 'fastify'
import { errors, toOAuthError } from '../core/errors.js'
import { sendOpenApiError } from '../core/replies.js'
import type { MacIdentity, MacVerifier } from './verify.js'

export interface MacAuthOptions {
  /** Scopes the token must have been granted. */
  scopes?: string[]
  /** `all` (default): every one of `scopes`; `any`: at least one. */
  match?: 'all' | 'any'
}

/** An `onRequest` hook; a plain function, so that a caller's own hook can call it as well. */
export type MacAuthHook = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>

/** RFC 9112 §3.2: more than one Host line is a 400. Node keeps the first; the signature covers one. */
function repeatsHost (rawHeaders: string[]): boolean {
  let seen = false
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    if (name.length === 4 && name.toLowerCase() === 'host') {
      if (seen) return true
      seen = true
    }
  }
  return false
}

function granted (scope: readonly string[], required: string[], match: 'all' | 'any'): boolean {
  if (required.length === 0) return true
  return match === 'any' ? required.some((item) => scope.includes(item)) : required.every((item) => scope.includes(item))
}

/**
 * A hook that admits only MAC-signed requests with the required scopes, before any body is read;
 * the caller's identity is left on `request.macIdentity`. A refusal is answered here, in the open
 * API's shape.
 */
export function macAuthHook (verifier: MacVerifier, { scopes = [], match = 'all' }: MacAuthOptions = {}): MacAuthHook {
  const missing = `scope ${scopes.join(match === 'any' ? ' or ' : ' and ')} not granted`
  return async function macAuth (request, reply) {
    if (repeatsHost(request.raw.rawHeaders)) return await sendOpenApiError(reply, errors.invalidRequest('more than one Host header'))
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
      if (errors.internal.is(failure)) request.log.error({ err: error }, 'MAC verification failed')
      request.macRejection = failure.message
      return await sendOpenApiError(reply, failure)
    }
    if (!granted(identity.scope, scopes, match)) {
      request.macRejection = missing
      return await sendOpenApiError(reply, errors.scopeNotGranted(missing))
    }
    request.macIdentity = identity
    return undefined
  }
}
