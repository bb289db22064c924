// What the gateway adds to every request when it serves TLS itself: Strict-Transport-Security on
// every answer (the pages among them), and on HTTP/2 the refusal of a request naming two hosts.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyInstance } from 'fastify'
import { authorityOf, errors, HOST_DIFFERS, TWO_AUTHORITIES } from '../../plugin/index.ts'
import { sendFailure } from '../open-api/error-answers.ts'
import { hstsValue, type HstsSettings } from '../config/edge-settings.ts'

/**
 * Callback-style `onRequest` hooks (no promise per request). The Host check runs for every path,
 * before any route's own hooks: the pages and the token endpoints read the host too (the metadata's
 * issuer, redirects), and it is answered in the path's form (error-answers.ts).
 */
export function registerSecureTransport (app: FastifyInstance, { hsts, http2 }: { hsts: HstsSettings | false, http2: boolean }): void {
  const header = hstsValue(hsts)
  if (header !== undefined) {
    app.addHook('onRequest', function strictTransport (_request: FastifyRequest, reply: FastifyReply, done: () => void) {
      reply.header('strict-transport-security', header)
      done()
    })
  }
  if (http2) {
    app.addHook('onRequest', function oneAuthority (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) {
      if (authorityOf(request.headers) !== TWO_AUTHORITIES) return done()
      sendFailure(request, reply, errors.invalidRequest(HOST_DIFFERS)).catch(done)
    })
  }
}
