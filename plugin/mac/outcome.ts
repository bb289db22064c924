import type { OAuthError } from '../core/errors.js'
import type { VerificationOutcome } from '../observe/metrics.js'
import { DENIALS } from './verify.js'

const BY_DENIAL = new Map<string, VerificationOutcome>([
  [DENIALS.macMismatch, 'mac_mismatch'],
  [DENIALS.staleNonce, 'stale_nonce'],
  [DENIALS.futureNonce, 'stale_nonce'],
  [DENIALS.replayedNonce, 'replayed_nonce'],
  [DENIALS.tokenParameter, 'query_binding'],
  [DENIALS.clientIdParameter, 'query_binding']
])

const BY_KIND: Record<string, VerificationOutcome> = {
  invalidAuthorization: 'malformed_header',
  invalidToken: 'unknown_token',
  scopeNotGranted: 'scope_denied',
  quotaExceeded: 'quota_exceeded',
  invalidRequest: 'bad_request',
  storeUnavailable: 'store_unavailable'
}

/** The reason a refusal is counted under in `macgate_verifications_total` (only on the refusal path). */
export function outcomeOf (failure: OAuthError): VerificationOutcome {
  if (failure.kind === 'accessDenied') return BY_DENIAL.get(failure.message) ?? 'mac_mismatch'
  return BY_KIND[failure.kind] ?? 'internal'
}
