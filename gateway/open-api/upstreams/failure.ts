// Why an upstream request failed, from the error undici gives, and what the caller gets for it.
import { errors, type OAuthError } from '../../../plugin/index.ts'

/** The causes an upstream failure is counted and logged under (a bounded label set). */
export const CAUSES = ['refused', 'reset', 'dns', 'tls', 'connect_timeout', 'headers_timeout', 'body_timeout', 'busy', 'no_instance', 'caller_gone', 'other'] as const
export type FailureCause = typeof CAUSES[number]

/** TLS failures: OpenSSL's and Node's codes for a handshake or a certificate that did not hold. */
function isTls (code: string): boolean {
  return code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code.includes('CERT') || code === 'EPROTO' || code.startsWith('UNABLE_TO_') || code.endsWith('SIGNED_CERT_IN_CHAIN')
}

/** The cause of an error from undici's request (or from a connection it opened). */
export function causeOf (error: Error): FailureCause {
  const code = (error as NodeJS.ErrnoException).code ?? ''
  switch (code) {
    case 'ECONNREFUSED': return 'refused'
    // ECONNRESET from the socket; UND_ERR_SOCKET is undici's "other side closed" (a FIN before an answer).
    case 'ECONNRESET': case 'EPIPE': case 'UND_ERR_SOCKET': return 'reset'
    case 'ENOTFOUND': case 'EAI_AGAIN': case 'EAI_FAIL': return 'dns'
    case 'UND_ERR_CONNECT_TIMEOUT': return 'connect_timeout'
    case 'UND_ERR_HEADERS_TIMEOUT': return 'headers_timeout'
    case 'UND_ERR_BODY_TIMEOUT': return 'body_timeout'
    case 'UND_ERR_ABORTED': return 'caller_gone'
  }
  return isTls(code) ? 'tls' : 'other'
}

/**
 * Causes for which nothing of the request reached the upstream: another instance may take a
 * GET or HEAD again. A reset or a timeout after the request went out is not one (the upstream may
 * have acted on it).
 */
export function failedBeforeSending (cause: FailureCause): boolean {
  return cause === 'refused' || cause === 'dns' || cause === 'tls' || cause === 'connect_timeout'
}

/**
 * Causes that count against an instance's health: it cannot be reached, or does not answer. Not a
 * reset after the request went out, nor an error undici raises about the request itself ('other'):
 * a caller could bring those about on purpose, and have healthy instances skipped.
 */
export function countsAgainstInstance (cause: FailureCause): boolean {
  return failedBeforeSending(cause) || cause === 'headers_timeout'
}

/** The caller's answer: 504 for time, 503 for the gateway's own bound, 502 for the rest. */
export function answerFor (cause: FailureCause, error?: Error): OAuthError {
  const options = error === undefined ? {} : { cause: error }
  if (cause === 'connect_timeout' || cause === 'headers_timeout') return errors.upstreamTimeout(undefined, options)
  if (cause === 'busy') return errors.upstreamBusy(undefined, options)
  return errors.upstreamUnavailable(undefined, options)
}
