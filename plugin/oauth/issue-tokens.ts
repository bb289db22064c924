import type { MacgateContext } from '../config/options.ts'
import type { AccessTokenRecord, RefreshTokenRecord, TokenRecords } from '../store/store.ts'
import { formatScope } from '../access/scope.ts'
import { deriveOpenId, hashSecret, mintMacKey, mintToken, sealMacKey } from '../access/credentials.ts'

export interface Grantee {
  grantId: string
  clientId: string
  userId: string
  scope: string[]
  /** Absent for HmacSha1. */
  macAlgorithm?: 'HmacSha256'
}

/** The grantee fields a client's registration adds: its algorithm, when not the default. */
export function algorithmOf (client: { macAlgorithm?: 'HmacSha256' }): { macAlgorithm?: 'HmacSha256' } {
  return client.macAlgorithm === undefined ? {} : { macAlgorithm: client.macAlgorithm }
}

/** When the last record of a token set expires: until then its grant must stay findable. */
export function lastExpiry ({ access, refresh }: TokenRecords): number {
  return Math.max(access.record.expiresAt, refresh?.record.expiresAt ?? 0)
}

/** A fresh access token and mac_key, and the record the store keeps of them. */
export function issueAccessToken (config: MacgateContext, grantee: Grantee, ttlSeconds: number) {
  const accessToken = mintToken(config.secret, grantee.grantId)
  const macKey = mintMacKey()
  const record: AccessTokenRecord = {
    ...grantee,
    openId: deriveOpenId(config.secret, grantee.clientId, grantee.userId),
    macKeySealed: sealMacKey(accessToken, macKey),
    expiresAt: config.clock() + ttlSeconds * 1000
  }
  return { accessToken, macKey, openId: record.openId, stored: { hash: hashSecret(accessToken), record } }
}

/**
 * Access and refresh token of a code or refresh grant, with the token endpoint's body. The refresh
 * token keeps the grant's whole scope even when this access token is narrowed (RFC 6749 §6).
 */
export function issueTokenSet (config: MacgateContext, grantee: Grantee, redirectUri: string, accessTtl: number, refreshTtl: number, refreshScope = grantee.scope) {
  const access = issueAccessToken(config, grantee, accessTtl)
  const refreshToken = mintToken(config.secret, grantee.grantId)
  const refreshRecord: RefreshTokenRecord = {
    ...grantee,
    scope: refreshScope,
    redirectUri,
    accessTokenHash: access.stored.hash,
    expiresAt: config.clock() + refreshTtl * 1000
  }
  return {
    tokens: { grantId: grantee.grantId, access: access.stored, refresh: { hash: hashSecret(refreshToken), record: refreshRecord } },
    // The contract's field order; expires_in a JSON number.
    body: {
      access_token: access.accessToken,
      expires_in: accessTtl,
      refresh_token: refreshToken,
      scope: formatScope(grantee.scope),
      token_type: 'mac',
      mac_key: access.macKey,
      mac_algorithm: grantee.macAlgorithm ?? 'HmacSha1',
      openId: access.openId
    }
  }
}
