// The three kinds of answer macgate writes, each rendered in one place: an HTML page (authorize,
// sign-in, consent, demo), a token endpoint body (`&&&START&&&` JSON) and an open API error.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { OAuthError } from './errors.ts'
import { errorPage } from './html.ts'

/** Never cached, never framed, no referrer leaking codes or state (contract §3). */
export const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
  'referrer-policy': 'no-referrer'
} as const

/** An `onSend` hook for a context of pages: every page and redirect it answers gets the headers. */
export async function securityHeaders (_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.headers(SECURITY_HEADERS)
}

export async function sendPage (reply: FastifyReply, html: string, status = 200): Promise<FastifyReply> {
  return await reply.code(status).type('text/html; charset=utf-8').send(html)
}

export async function sendErrorPage (reply: FastifyReply, error: OAuthError): Promise<FastifyReply> {
  if (error.retryAfter !== undefined) reply.header('retry-after', error.retryAfter)
  return await sendPage(reply, errorPage(error), error.statusCode)
}

// The token endpoint's anti-JSON-hijacking prefix (contract §4).
const TOKEN_PREFIX = '&&&START&&&'

export async function sendTokenBody (reply: FastifyReply, body: object, status = 200): Promise<FastifyReply> {
  return await reply.code(status)
    .header('content-type', 'application/json;charset=UTF-8')
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .send(TOKEN_PREFIX + JSON.stringify(body))
}

/** `status` replaces the error's own only for `tokenErrorStatus: 200` (legacy SDKs). */
export async function sendTokenError (reply: FastifyReply, error: OAuthError, status = error.statusCode): Promise<FastifyReply> {
  if (error.retryAfter !== undefined) reply.header('retry-after', error.retryAfter)
  return await sendTokenBody(reply, { error: error.errno, error_description: error.message }, status)
}

/** An error in the open API's own shape: no prefix, a challenge on 401. */
export async function sendOpenApiError (reply: FastifyReply, error: OAuthError): Promise<FastifyReply> {
  if (error.statusCode === 401) reply.header('www-authenticate', 'MAC')
  if (error.retryAfter !== undefined) reply.header('retry-after', error.retryAfter)
  const debug = error.stringToSign === undefined ? {} : { string_to_sign: error.stringToSign }
  return await reply.code(error.statusCode).send({ result: 'error', description: error.message, code: error.errno, ...debug })
}
