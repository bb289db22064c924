import type { OAuthError } from '../http/errors.ts'
import type { VerificationOutcome } from '../observe/metrics.ts'
import { DENIALS } from './verify.ts'

/** The verifier's 96012 refusals carry their reason (set where each is thrown). */
const BY_REASON = new Map<string, VerificationOutcome>(Object.values(DENIALS).map(({ reason }) => [reason, reason]))

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
  const reason = failure.reason === undefined ? undefined : BY_REASON.get(failure.reason)
  return reason ?? BY_KIND[failure.kind] ?? 'internal'
}
