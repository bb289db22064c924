import type { SignedInUser } from '../account/session.ts'
import type { MacgateContext } from '../config/options.ts'
import { hashSecret, mintCode, newGrantId } from '../access/credentials.ts'
import { formatScope } from '../access/scope.ts'
import type { AuthorizationRequest } from './authorize-request.ts'
import { algorithmOf, issueAccessToken } from './issue-tokens.ts'
import { withFragment, withQuery } from './redirect-uri.ts'

/** What one authorization grants: to which client, for which user, what. */
export interface Authorization {
  clientId: string
  userId: string
  scope: string[]
  macAlgorithm?: 'HmacSha256'
}

export interface CodeAuthorization extends Authorization {
  /** The registered redirect URI the code is bound to. */
  redirectUri: string
  codeChallenge?: string
}

/**
 * A new grant with its code, saved as the code grant's first step; resolves to the code. Also the
 * package's own (seeding a deployment, the benchmark, tests): the code is bound to `redirectUri`.
 */
export async function grantCode (config: MacgateContext, authorization: CodeAuthorization): Promise<string> {
  const grantId = newGrantId()
  const expiresAt = config.clock() + config.codeTtl * 1000
  await config.store.trackGrant(authorization.clientId, grantId, expiresAt, authorization.userId)
  const code = mintCode(config.secret, grantId)
  await config.store.saveCode(hashSecret(code), { grantId, ...authorization, expiresAt })
  config.events.record('grant.issued', { grantId, clientId: authorization.clientId, userId: authorization.userId, scope: authorization.scope, responseType: 'code' })
  return code
}

/** A new grant with an access token and no refresh token, as the implicit grant issues it (also the package's own, like `grantCode`). */
export async function grantAccessToken (config: MacgateContext, authorization: Authorization, ttlSeconds = config.accessTokenTtl): Promise<{ accessToken: string, macKey: string, openId: string }> {
  const grantId = newGrantId()
  const issued = issueAccessToken(config, { grantId, ...authorization }, ttlSeconds)
  await config.store.trackGrant(authorization.clientId, grantId, issued.stored.record.expiresAt, authorization.userId)
  await config.store.saveTokens({ grantId, access: issued.stored })
  config.events.record('grant.issued', { grantId, clientId: authorization.clientId, userId: authorization.userId, scope: authorization.scope, responseType: 'token' })
  return { accessToken: issued.accessToken, macKey: issued.macKey, openId: issued.openId }
}

function withState (params: Record<string, string>, state: string | undefined): Record<string, string> {
  return state === undefined ? params : { ...params, state }
}

/** Completes an allowed authorization: the redirect carrying a code or an implicit token set. */
export async function issueAuthorization (config: MacgateContext, request: AuthorizationRequest, user: SignedInUser): Promise<string> {
  const authorization = { clientId: request.client.id, userId: user.id, scope: request.scope }
  if (request.responseType === 'code') {
    const code = await grantCode(config, {
      ...authorization,
      redirectUri: request.registeredUri,
      ...(request.codeChallenge !== undefined && { codeChallenge: request.codeChallenge })
    })
    return withQuery(request.redirectUri, withState({ code }, request.state))
  }
  const accessTtl = request.client.accessTokenTtl ?? config.accessTokenTtl
  // A code's tokens take the client's algorithm when exchanged; an implicit token takes it now.
  const issued = await grantAccessToken(config, { ...authorization, ...algorithmOf(request.client) }, accessTtl)
  return withFragment(request.redirectUri, withState({
    access_token: issued.accessToken,
    token_type: 'mac',
    expires_in: String(accessTtl),
    scope: formatScope(request.scope),
    mac_key: issued.macKey,
    mac_algorithm: request.client.macAlgorithm ?? 'HmacSha1'
  }, request.state))
}
