import createError from '@fastify/error'

/**
 * Every failure macgate answers, as one family: each kind is a class of its own (built by
 * @fastify/error) carrying the contract's integer code (`errno`), its HTTP status and a line of
 * advice for the person reading an error page. Call sites never change a status: a different
 * status is a different kind.
 */
export class OAuthError extends Error {
  /** The contract's name of the code, e.g. OA_INVALID_REQUEST (several kinds may share one). */
  declare code: string
  /** Which kind of the family: the key in `errors`. */
  declare kind: string
  declare errno: number
  declare statusCode: number
  /** Whose move it is, for the person reading an error page. */
  declare advice: string
  /** Seconds until a refused caller may try again (sent as Retry-After). */
  declare retryAfter?: number
  /** With `macDebug`, a mac mismatch carries the server's string to sign (never the key or the mac). */
  declare stringToSign?: string
  /** Which case of its kind this is, where a kind has several that are counted apart (the MAC verifier's refusals). */
  declare reason?: string
}

export interface ErrorOptions {
  cause?: unknown
  /** Seconds, for Retry-After. */
  retryAfter?: number
  stringToSign?: string
  reason?: string
}

export interface OAuthErrorFactory {
  (description?: string, options?: ErrorOptions): OAuthError
  readonly errno: number
  readonly text: string
  readonly statusCode: number
  /** True when `error` is of this kind. */
  is (error: unknown): boolean
}

const ADVICE = {
  client: 'The application sent an invalid request. Return to it and try again.',
  wait: 'Too many attempts; wait a minute and try again.',
  unavailable: 'The service is temporarily unavailable. Try again in a moment.',
  internal: 'Something went wrong on our side. Try again later.'
}

interface Definition {
  errno: number
  code: string
  text: string
  statusCode: number
  advice?: string
}

function define (kind: string, { errno, code, text, statusCode, advice = ADVICE.client }: Definition): OAuthErrorFactory {
  const ErrorClass = createError(code, '%s', statusCode, OAuthError as unknown as ErrorConstructor)
  Object.assign(ErrorClass.prototype, { errno, advice, kind })
  const make = (description = text, { cause, retryAfter, stringToSign, reason }: ErrorOptions = {}): OAuthError => {
    const error = (cause === undefined ? new ErrorClass(description) : new ErrorClass(description, { cause })) as unknown as OAuthError
    // @fastify/error sets the status on the instance; the kind's own is the only one there is.
    error.statusCode = statusCode
    if (retryAfter !== undefined) error.retryAfter = retryAfter
    if (stringToSign !== undefined) error.stringToSign = stringToSign
    if (reason !== undefined) error.reason = reason
    return error
  }
  // Kinds sharing a contract code share @fastify/error's instanceof: compare the kind instead.
  return Object.assign(make, { errno, text, statusCode, is: (error: unknown) => isOAuthError(error) && error.kind === kind })
}

// The contract's section 5, one kind per (code, status) pair.
export const errors = {
  /** The store could not be reached: never a pass, never a 400 or a 500. */
  storeUnavailable: define('storeUnavailable', { errno: 96000, code: 'OA_SERVICE_UNAVAILABLE', text: 'service temporarily unavailable', statusCode: 503, advice: ADVICE.unavailable }),
  /** A fault of ours; the answer says nothing more, the log has the stack. */
  internal: define('internal', { errno: 500, code: 'OA_INTERNAL_ERROR', text: 'internal server error', statusCode: 500, advice: ADVICE.internal }),
  clientNotExists: define('clientNotExists', { errno: 96001, code: 'OA_CLIENT_NOT_EXISTS', text: 'client does not exist', statusCode: 401 }),
  invalidRequest: define('invalidRequest', { errno: 96002, code: 'OA_INVALID_REQUEST', text: 'invalid request', statusCode: 400 }),
  /** A MAC Authorization header missing or malformed (401, so that the caller signs again). */
  invalidAuthorization: define('invalidAuthorization', { errno: 96002, code: 'OA_INVALID_REQUEST', text: 'invalid MAC Authorization header', statusCode: 401 }),
  forbidden: define('forbidden', { errno: 96002, code: 'OA_INVALID_REQUEST', text: 'forbidden', statusCode: 403 }),
  methodNotAllowed: define('methodNotAllowed', { errno: 96002, code: 'OA_INVALID_REQUEST', text: 'method not allowed', statusCode: 405 }),
  payloadTooLarge: define('payloadTooLarge', { errno: 96002, code: 'OA_INVALID_REQUEST', text: 'request body too large', statusCode: 413 }),
  unsupportedMediaType: define('unsupportedMediaType', { errno: 96002, code: 'OA_INVALID_REQUEST', text: 'unsupported content type', statusCode: 415 }),
  tooManyRequests: define('tooManyRequests', { errno: 96002, code: 'OA_INVALID_REQUEST', text: 'too many requests', statusCode: 429, advice: ADVICE.wait }),
  invalidClient: define('invalidClient', { errno: 96003, code: 'OA_INVALID_CLIENT', text: 'client authentication failed', statusCode: 401 }),
  invalidGrant: define('invalidGrant', { errno: 96004, code: 'OA_INVALID_GRANT', text: 'grant was issued to another client or redirect uri', statusCode: 400 }),
  unauthorizedClient: define('unauthorizedClient', { errno: 96005, code: 'OA_UNAUTHORIZED_CLIENT', text: 'client may not use this grant or response type', statusCode: 400 }),
  unsupportedGrantType: define('unsupportedGrantType', { errno: 96006, code: 'OA_UNSUPPORTED_GRANT_TYPE', text: 'unsupported grant_type', statusCode: 400 }),
  invalidScope: define('invalidScope', { errno: 96007, code: 'OA_INVALID_SCOPE', text: 'invalid scope', statusCode: 400 }),
  invalidToken: define('invalidToken', { errno: 96008, code: 'OA_INVALID_TOKEN', text: 'access token invalid or expired', statusCode: 401 }),
  invalidRefreshToken: define('invalidRefreshToken', { errno: 96009, code: 'OA_INVALID_REFRESHTOKEN', text: 'refresh token invalid or expired', statusCode: 400 }),
  invalidRedirectUri: define('invalidRedirectUri', { errno: 96010, code: 'OA_INVALID_REDIRECT_URI', text: 'redirect_uri missing or not matching', statusCode: 400 }),
  unsupportedResponseType: define('unsupportedResponseType', { errno: 96011, code: 'OA_UNSUPPORTED_RESPONSE_TYPE', text: 'unsupported response_type', statusCode: 400 }),
  accessDenied: define('accessDenied', { errno: 96012, code: 'OA_ACCESS_DENIED', text: 'access denied', statusCode: 401 }),
  /** A verified token without the scope a route needs. */
  scopeNotGranted: define('scopeNotGranted', { errno: 96012, code: 'OA_ACCESS_DENIED', text: 'scope not granted', statusCode: 403 }),
  /** A verified client over its quota on a limited route (README, "Quotas"); Retry-After says when the window opens. */
  quotaExceeded: define('quotaExceeded', { errno: 96014, code: 'OA_QUOTA_EXCEEDED', text: 'quota exceeded', statusCode: 429, advice: 'This application has used up its requests for now; try again in a minute.' }),
  invalidCode: define('invalidCode', { errno: 96013, code: 'OA_INVALID_CODE', text: 'code invalid or expired', statusCode: 400 }),
  // RFC 8628 §3.5: a device's poll at the standard token endpoint (contract §12). The Xiaomi dialect
  // has no device grant (it answers 96006), so these never reach it; 96002 is their place in the family.
  authorizationPending: define('authorizationPending', { errno: 96002, code: 'OA_AUTHORIZATION_PENDING', text: 'the user has not decided yet', statusCode: 400 }),
  slowDown: define('slowDown', { errno: 96002, code: 'OA_SLOW_DOWN', text: 'polled too often: wait 5 s more between polls', statusCode: 400 }),
  expiredToken: define('expiredToken', { errno: 96002, code: 'OA_EXPIRED_TOKEN', text: 'the device code expired: start again', statusCode: 400 }),
  deviceAccessDenied: define('deviceAccessDenied', { errno: 96012, code: 'OA_ACCESS_DENIED', text: 'the user denied the device access', statusCode: 400 }),
  /** The gateway's upstream refused, reset or could not be reached (the open API's own 502). */
  upstreamUnavailable: define('upstreamUnavailable', { errno: 502, code: 'OA_UPSTREAM_UNAVAILABLE', text: 'upstream unavailable', statusCode: 502, advice: ADVICE.unavailable }),
  /** Too many requests already wait for this upstream: refused at once rather than queued (the same family as 502 and 504). */
  upstreamBusy: define('upstreamBusy', { errno: 503, code: 'OA_UPSTREAM_BUSY', text: 'upstream busy', statusCode: 503, advice: ADVICE.unavailable }),
  /** The upstream did not answer in time. */
  upstreamTimeout: define('upstreamTimeout', { errno: 504, code: 'OA_UPSTREAM_TIMEOUT', text: 'upstream did not answer in time', statusCode: 504, advice: ADVICE.unavailable }),
  /** An open API path no route is configured for (the open API's own 404). */
  noSuchApi: define('noSuchApi', { errno: 404, code: 'OA_NO_SUCH_API', text: 'no such API', statusCode: 404 })
} as const

export function isOAuthError (error: unknown): error is OAuthError {
  return error instanceof OAuthError
}

// What Fastify and its plugins reject before our handlers run (bad body, CSRF, rate limit, ...).
const BY_STATUS: Record<number, OAuthErrorFactory> = {
  401: errors.invalidAuthorization,
  403: errors.forbidden,
  404: errors.noSuchApi,
  405: errors.methodNotAllowed,
  413: errors.payloadTooLarge,
  415: errors.unsupportedMediaType,
  429: errors.tooManyRequests
}

// What the proxy's client (@fastify/reply-from) reports about the upstream: its 503 is a DNS
// failure (the upstream could not be reached, a 502 here); a busy upstream is the gateway's own word.
const UPSTREAM_BY_STATUS: Record<number, OAuthErrorFactory> = {
  502: errors.upstreamUnavailable,
  503: errors.upstreamUnavailable,
  504: errors.upstreamTimeout
}

/**
 * Any thrown value as a member of the family: ours as it is; a framework error about the request
 * (4xx) as the kind of its status, keeping its message; the proxy's word about its upstream as
 * an upstream kind; anything else an internal error, whose message stays out of the answer.
 */
export function toOAuthError (error: unknown): OAuthError {
  if (isOAuthError(error)) return error
  const status = (error as { statusCode?: unknown } | null)?.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return (BY_STATUS[status] ?? errors.invalidRequest)((error as Error).message, { cause: error })
  }
  const upstream = typeof status === 'number' ? UPSTREAM_BY_STATUS[status] : undefined
  if (upstream !== undefined) return upstream(undefined, { cause: error })
  return errors.internal(undefined, { cause: error })
}
