import type { MacgateConfig } from '../options.js'
import type { AuthorizationRequest } from './authorize-request.js'
import { withFragment, withQuery } from './redirect.js'
import { formatScope } from './scope.js'
import { issueAccessToken } from './token-set.js'
import { hashSecret, mintCode, newGrantId } from './tokens.js'

export interface SignedInUser {
  id: string
  username: string
}

function withState (params: Record<string, string>, state: string | undefined): Record<string, string> {
  return state === undefined ? params : { ...params, state }
}

/** Completes an allowed authorization: the redirect carrying a code or an implicit token set. */
export async function issueAuthorization (config: MacgateConfig, request: AuthorizationRequest, user: SignedInUser): Promise<string> {
  const { store } = config
  const { client } = request
  const grantId = newGrantId()
  await store.openGrant(client.id, grantId)

  if (request.responseType === 'code') {
    const code = mintCode(config.secret, grantId)
    await store.saveCode(hashSecret(code), grantId, {
      grantId,
      clientId: client.id,
      userId: user.id,
      redirectUri: request.registeredUri,
      scope: request.scope,
      ...(request.codeChallenge !== undefined && { codeChallenge: request.codeChallenge })
    }, config.codeTtl)
    return withQuery(request.redirectUri, withState({ code }, request.state))
  }

  const accessTtl = client.accessTokenTtl ?? config.accessTokenTtl
  const issued = issueAccessToken(config, { grantId, clientId: client.id, userId: user.id, scope: request.scope }, accessTtl)
  await store.saveTokens({ grantId, access: issued.stored }, accessTtl, accessTtl)
  return withFragment(request.redirectUri, withState({
    access_token: issued.accessToken,
    token_type: 'mac',
    expires_in: String(accessTtl),
    scope: formatScope(request.scope),
    mac_key: issued.macKey,
    mac_algorithm: 'HmacSha1'
  }, request.state))
}
