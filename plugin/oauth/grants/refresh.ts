import { errors } from '../../errors.js'
import type { MacgateConfig } from '../../options.js'
import type { ClientRecord } from '../../store/store.js'
import { required, single, type Params } from '../params.js'
import { narrowScope, parseScope } from '../scope.js'
import { issueTokenSet } from '../token-set.js'
import { grantIdOf, hashSecret } from '../tokens.js'
import { checkRedirectUri } from './redirect-check.js'

/** grant_type=refresh_token: rotates once; a spent token presented again revokes the grant. */
export async function refreshTokens (config: MacgateConfig, client: ClientRecord, params: Params): Promise<object> {
  const { store } = config
  const redirectUri = checkRedirectUri(config, client, params)
  const refreshToken = required(params, 'refresh_token')
  const grantId = grantIdOf(config.secret, refreshToken)
  if (grantId === undefined) throw errors.invalidRefreshToken()
  const tokenHash = hashSecret(refreshToken)
  const record = await store.getRefreshToken(tokenHash, grantId)
  if (record === undefined) throw errors.invalidRefreshToken()
  if (record.spent === true) {
    await store.revokeGrant(grantId)
    throw errors.invalidRefreshToken('refresh token already used')
  }
  if (record.clientId !== client.id) throw errors.invalidGrant('refresh token was issued to another client')
  if (redirectUri !== record.redirectUri) throw errors.invalidGrant('refresh token was issued for another redirect_uri')
  const requested = single(params, 'scope')
  if (requested !== undefined && parseScope(requested).length === 0) throw errors.invalidRequest('scope is empty')
  const scope = requested === undefined ? record.scope : narrowScope(record.scope, parseScope(requested))

  const accessTtl = client.accessTokenTtl ?? config.accessTokenTtl
  const refreshTtl = client.refreshTokenTtl ?? config.refreshTokenTtl
  const { tokens, body } = issueTokenSet(config, { grantId, clientId: client.id, userId: record.userId, scope }, record.redirectUri, accessTtl, refreshTtl, record.scope)
  const result = await store.rotateRefreshToken(tokenHash, tokens, accessTtl, refreshTtl)
  if (result !== 'ok') throw errors.invalidRefreshToken(result === 'replayed' ? 'refresh token already used' : undefined)
  return body
}
