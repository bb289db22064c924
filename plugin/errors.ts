import createError from '@fastify/error'
import { StoreUnavailableError } from './store/store.js'

/** Every protocol error: a Fastify error carrying the contract's integer code (`errno`). */
export class OAuthError extends Error {
  declare code: string
  declare errno: number
  declare statusCode: number
}

export type OAuthErrorFactory = ((description?: string, statusCode?: number) => OAuthError) & {
  readonly errno: number
  readonly text: string
}

function define (errno: number, code: string, text: string, statusCode = 400): OAuthErrorFactory {
  const ErrorClass = createError(code, '%s', statusCode, OAuthError as unknown as ErrorConstructor)
  const prototype = ErrorClass.prototype as unknown as OAuthError
  prototype.errno = errno
  const make = (description = text, status = statusCode): OAuthError => {
    const error = new ErrorClass(description) as unknown as OAuthError
    error.statusCode = status
    return error
  }
  return Object.assign(make, { errno, text })
}

// The contract's section 5, one factory each. Status codes are the token endpoint's defaults.
export const errors = {
  // Not in the contract's table: the store could not be reached. Never a pass, never a 500.
  serviceUnavailable: define(96000, 'OA_SERVICE_UNAVAILABLE', 'service temporarily unavailable', 503),
  clientNotExists: define(96001, 'OA_CLIENT_NOT_EXISTS', 'client does not exist', 401),
  invalidRequest: define(96002, 'OA_INVALID_REQUEST', 'invalid request'),
  invalidClient: define(96003, 'OA_INVALID_CLIENT', 'client authentication failed', 401),
  invalidGrant: define(96004, 'OA_INVALID_GRANT', 'grant was issued to another client or redirect uri'),
  unauthorizedClient: define(96005, 'OA_UNAUTHORIZED_CLIENT', 'client may not use this grant or response type'),
  unsupportedGrantType: define(96006, 'OA_UNSUPPORTED_GRANT_TYPE', 'unsupported grant_type'),
  invalidScope: define(96007, 'OA_INVALID_SCOPE', 'invalid scope'),
  invalidToken: define(96008, 'OA_INVALID_TOKEN', 'access token invalid or expired', 401),
  invalidRefreshToken: define(96009, 'OA_INVALID_REFRESHTOKEN', 'refresh token invalid or expired'),
  invalidRedirectUri: define(96010, 'OA_INVALID_REDIRECT_URI', 'redirect_uri missing or not matching'),
  unsupportedResponseType: define(96011, 'OA_UNSUPPORTED_RESPONSE_TYPE', 'unsupported response_type'),
  accessDenied: define(96012, 'OA_ACCESS_DENIED', 'access denied', 401),
  invalidCode: define(96013, 'OA_INVALID_CODE', 'code invalid or expired')
} as const

export function isOAuthError (error: unknown): error is OAuthError {
  return error instanceof OAuthError
}

/**
 * Any error as a protocol error: the store being away is 503, a framework error about the request
 * (bad body, wrong content type, too large) is 96002, anything else a 500 kept out of the answer.
 */
export function toOAuthError (error: unknown): OAuthError {
  if (isOAuthError(error)) return error
  if (error instanceof StoreUnavailableError) return errors.serviceUnavailable()
  const status = (error as { statusCode?: number }).statusCode
  if (status !== undefined && status >= 400 && status < 500) return errors.invalidRequest((error as Error).message, status)
  return errors.serviceUnavailable('server error', 500)
}
