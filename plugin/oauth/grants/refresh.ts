import { errors } from '../../core/errors.js'
import type { MacgateConfig } from '../../config/options.js'
import type { ClientRecord, RefreshTokenRecord } from '../../store/store.js'
import { required, single, type Params } from '../../core/params.js'
import { narrowScope, parseScope } from '../../core/scope.js'
import { algorithmOf, issueTokenSet, lastExpiry } from '../issue-tokens.js'
import { readOnce } from './use-once.js'
import { checkRedirectUri } from './redirect-check.js'

/** grant_type=refresh_token: rotates once; a spent token presented again revokes the grant. */
export async function refreshTokens (config: MacgateConfig, client: ClientRecord, params: Params): Promise<object> {
  const { store } = config
  const redirectUri = checkRedirectUri(config, client, params)
  const { grantId, hash: tokenHash, record } = await readOnce<RefreshTokenRecord>(config, client, redirectUri, required(params, 'refresh_token'), {
    name: 'refresh token', read: store.getRefreshToken.bind(store), used: (token) => token.spent === true, invalid: errors.invalidRefreshToken
  })
  const requested = single(params, 'scope')
  if (requested !== undefined && parseScope(requested).length === 0) throw errors.invalidRequest('scope is empty')
  const scope = requested === undefined ? record.scope : narrowScope(record.scope, parseScope(requested))

  const accessTtl = client.accessTokenTtl ?? config.accessTokenTtl
  const refreshTtl = client.refreshTokenTtl ?? config.refreshTokenTtl
  const { tokens, body } = issueTokenSet(config, { grantId, clientId: client.id, userId: record.userId, scope, ...algorithmOf(client) }, record.redirectUri, accessTtl, refreshTtl, record.scope)
  await store.trackGrant(client.id, grantId, lastExpiry(tokens))
  const result = await store.rotateRefreshToken(tokenHash, tokens)
  if (result !== 'ok') throw errors.invalidRefreshToken(result === 'replayed' ? 'refresh token already used' : undefined)
  return body
}
