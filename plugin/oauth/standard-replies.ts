import type { FastifyReply } from 'fastify'
import type { OAuthError } from '../core/errors.js'

// The RFC endpoints (contract §10) answer plain JSON with RFC 6749's string codes, not the Xiaomi
// integers: the same error kinds, named as a generic client expects them.
const RFC_CODES: Record<string, string> = {
  clientNotExists: 'invalid_client',
  invalidClient: 'invalid_client',
  unauthorizedClient: 'unauthorized_client',
  storeUnavailable: 'temporarily_unavailable',
  tooManyRequests: 'temporarily_unavailable',
  internal: 'server_error'
}

export function rfcCode (error: OAuthError): string {
  return RFC_CODES[error.kind] ?? 'invalid_request'
}

export async function sendStandardJson (reply: FastifyReply, body: object, status = 200): Promise<FastifyReply> {
  return await reply.code(status).header('cache-control', 'no-store').header('pragma', 'no-cache').send(body)
}

export async function sendStandardError (reply: FastifyReply, error: OAuthError): Promise<FastifyReply> {
  if (error.retryAfter !== undefined) reply.header('retry-after', error.retryAfter)
  return await sendStandardJson(reply, { error: rfcCode(error), error_description: error.message }, error.statusCode)
}
