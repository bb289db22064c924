import { errors } from '../../http/errors.ts'
import type { MacgateContext } from '../../config/options.ts'
import type { ClientRecord, RefreshTokenRecord } from '../../store/store.ts'
import { required, single, type Params } from '../../http/params.ts'
import { narrowScope, parseScope } from '../../access/scope.ts'
import { issueGrantTokens } from './grant-tokens.ts'
import { openSuccessor, sealSuccessor } from '../../access/credentials.ts'
import { checkUsed, readOnce, type UseOnce } from './use-once.ts'
import { checkRedirectUri } from './redirect-check.ts'

/**
 * grant_type=refresh_token: rotates once; a spent token presented again revokes the grant. With
 * `refreshReuseGraceSeconds`, the rotation keeps its answer sealed under the spent token for that
 * long, and the store's own atomic step hands it back to a repeat within the grace (a lost
 * response, two refreshes racing) instead of revoking; the decision is the store's, so parallel
 * refreshes cannot both win or both lose. The Xiaomi dialect requires the redirect_uri (contract §4);
 * RFC 6749 §6 has none, so the standard endpoint passes `{ redirectUri: false }`.
 */
export async function refreshTokens (config: MacgateContext, client: ClientRecord, params: Params, { redirectUri: checked = true } = {}): Promise<object> {
  const { store } = config
  const redirectUri = checked ? checkRedirectUri(config, client, params) : undefined
  const refreshToken = required(params, 'refresh_token')
  const graceMs = config.refreshReuseGraceSeconds * 1000
  const kind: UseOnce<RefreshTokenRecord> = {
    name: 'refresh token',
    read: store.getRefreshToken.bind(store),
    // With a grace, a spent token goes on to the store, which knows whether its grace still runs.
    used: (token) => token.spent === true && graceMs === 0,
    invalid: errors.invalidRefreshToken
  }
  const { grantId, hash: tokenHash, record } = await readOnce(config, client, redirectUri, refreshToken, kind)
  const requested = single(params, 'scope')
  if (requested !== undefined && parseScope(requested).length === 0) throw errors.invalidRequest('scope is empty')
  const scope = requested === undefined ? record.scope : narrowScope(record.scope, parseScope(requested))

  const { tokens, body } = await issueGrantTokens(config, client, { grantId, userId: record.userId, scope }, record.redirectUri, record.scope)
  const grace = graceMs === 0 ? undefined : { graceMs, successor: sealSuccessor(refreshToken, JSON.stringify(body)) }
  const result = await store.rotateRefreshToken(tokenHash, tokens, grace)
  // Spent within its grace: the rotation that spent it answers again. Past it, a reuse.
  if (typeof result === 'object') return JSON.parse(openSuccessor(refreshToken, result.successor)) as object
  checkUsed(config, kind, grantId, client.id, result)
  config.events.record('refresh.rotated', { grantId, clientId: client.id, userId: record.userId })
  return body
}
