import type { FastifyReply } from 'fastify'
import type { OAuthError } from '../http/errors.ts'

// The RFC endpoints (contract §10) answer plain JSON with RFC 6749's string codes (§5.2), not the
// Xiaomi integers: the same error kinds, named as a generic client expects them. A kind not listed
// (a malformed, missing or repeated parameter, a wrong method or media type) is `invalid_request`.
const RFC_CODES: Record<string, string> = {
  clientNotExists: 'invalid_client',
  invalidClient: 'invalid_client',
  // An unknown, expired, spent or revoked code or refresh token, another client's or another
  // redirect URI's, a PKCE verifier that does not match: all "invalid_grant" (§5.2).
  invalidGrant: 'invalid_grant',
  invalidCode: 'invalid_grant',
  invalidRefreshToken: 'invalid_grant',
  invalidRedirectUri: 'invalid_grant',
  unauthorizedClient: 'unauthorized_client',
  unsupportedGrantType: 'unsupported_grant_type',
  invalidScope: 'invalid_scope',
  // RFC 8628 §3.5, a device's poll.
  authorizationPending: 'authorization_pending',
  slowDown: 'slow_down',
  expiredToken: 'expired_token',
  deviceAccessDenied: 'access_denied',
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

/**
 * A failure in RFC 6749 §5.2 form. A 401 (the client failed to authenticate) always carries the
 * Basic challenge: RFC 6749 requires it after Basic, and RFC 9110 §15.5.2 for any 401.
 */
export async function sendStandardError (reply: FastifyReply, error: OAuthError): Promise<FastifyReply> {
  if (error.retryAfter !== undefined) reply.header('retry-after', error.retryAfter)
  if (error.statusCode === 401) reply.header('www-authenticate', 'Basic realm="macgate"')
  return await sendStandardJson(reply, { error: rfcCode(error), error_description: error.message }, error.statusCode)
}
