import { errors, type OAuthError, type OAuthErrorFactory } from '../../http/errors.ts'
import type { MacgateContext } from '../../config/options.ts'
import type { ClientRecord, RedeemResult } from '../../store/store.ts'
import { grantIdOf, hashSecret } from '../../access/credentials.ts'

interface Issued {
  clientId: string
  redirectUri: string
}

export interface UseOnce<R extends Issued> {
  /** What the value is, for error texts and audit events. */
  name: 'code' | 'refresh token'
  read: (hash: string, grantId: string) => Promise<R | undefined>
  used: (record: R) => boolean
  /** The error for an unknown, expired or already used value. */
  invalid: OAuthErrorFactory
}

/**
 * Reads a code or refresh token for the client presenting it. Unknown or expired: `invalid`.
 * Presented again after use: the whole grant is revoked (RFC 6749 §4.1.2, RFC 9700 §4.14), then
 * `invalid`. Issued to another client or redirect URI: 96004 (no redirect URI to compare when the
 * request carries none by its dialect: an RFC 6749 §6 refresh). The use itself is the caller's
 * atomic store operation.
 */
export async function readOnce<R extends Issued> (config: MacgateContext, client: ClientRecord, redirectUri: string | undefined, value: string, kind: UseOnce<R>) {
  const grantId = grantIdOf(config.secret, value)
  if (grantId === undefined) throw kind.invalid()
  const hash = hashSecret(value)
  const record = await kind.read(hash, grantId)
  if (record === undefined) throw kind.invalid()
  if (kind.used(record)) {
    await config.store.revokeGrant(grantId)
    throw reused(config, kind, grantId, record.clientId)
  }
  if (record.clientId !== client.id) throw errors.invalidGrant(`${kind.name} was issued to another client`)
  if (redirectUri !== undefined && redirectUri !== record.redirectUri) throw errors.invalidGrant(`${kind.name} was issued for another redirect_uri`)
  return { grantId, hash, record }
}

/**
 * The store's answer to the caller's use of what `readOnce` read: 'replayed' when a racing request
 * spent it meanwhile (the store's own step has revoked the grant), reported as a reuse; anything
 * but 'ok' else, `invalid`.
 */
export function checkUsed (config: MacgateContext, kind: Pick<UseOnce<Issued>, 'name' | 'invalid'>, grantId: string, clientId: string, result: RedeemResult): void {
  if (result === 'replayed') throw reused(config, kind, grantId, clientId)
  if (result !== 'ok') throw kind.invalid()
}

/** A reuse of a spent value, recorded for the audit: the error it gets. */
function reused (config: MacgateContext, kind: Pick<UseOnce<Issued>, 'name' | 'invalid'>, grantId: string, clientId: string): OAuthError {
  config.events.record('reuse.detected', { grantId, clientId, what: kind.name })
  return kind.invalid(`${kind.name} already used`)
}
