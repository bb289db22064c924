import type { MacgateContext } from '../../config/options.ts'
import type { ClientRecord } from '../../store/store.ts'
import { algorithmOf, issueTokenSet, lastExpiry } from '../issue-tokens.ts'

/** Whose grant the token set is: the grant, its user, its scope. */
export interface GrantOwner {
  grantId: string
  userId: string
  scope: string[]
}

/**
 * A grant's access and refresh token for the client, at the client's lifetimes (else the server's),
 * with the token endpoint's body. The grant is tracked first, before the tokens exist, so that
 * removing the client, or the user removing the app, always finds it; storing the tokens is the
 * caller's own atomic step.
 */
export async function issueGrantTokens (config: MacgateContext, client: ClientRecord, { grantId, userId, scope }: GrantOwner, redirectUri: string, refreshScope?: string[]) {
  const accessTtl = client.accessTokenTtl ?? config.accessTokenTtl
  const refreshTtl = client.refreshTokenTtl ?? config.refreshTokenTtl
  const issued = issueTokenSet(config, { grantId, clientId: client.id, userId, scope, ...algorithmOf(client) }, redirectUri, accessTtl, refreshTtl, refreshScope)
  await config.store.trackGrant(client.id, grantId, lastExpiry(issued.tokens), userId)
  return issued
}
