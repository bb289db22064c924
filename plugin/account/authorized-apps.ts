import type { ConsentStore, GrantIndex, TokenStore, UserGrant } from '../store/store.ts'

/**
 * Revokes the user's grants that `which` picks, each with the store's atomic revoke (which
 * announces the revoked tokens to every instance), and drops them from the user's index.
 * Resolves to the grants revoked.
 */
export async function revokeUserGrants (store: GrantIndex & TokenStore, userId: string, which: (grant: UserGrant) => boolean = () => true): Promise<UserGrant[]> {
  const revoked = (await store.listUserGrants(userId)).filter(which)
  for (const grant of revoked) {
    await store.revokeGrant(grant.grantId)
    await store.forgetUserGrant(userId, grant.clientId, grant.grantId)
  }
  return revoked
}

/**
 * Removes an app's access for a user: the consent first, so that no new grant is issued without
 * asking again (even with skip_confirm), then every grant of the user for that app. If the store
 * fails between the two, the app still shows on the apps page by its remaining grants, so the user
 * can remove it again. Resolves to whether the user had consented and how many grants were revoked.
 */
export async function removeAppAccess (store: ConsentStore & GrantIndex & TokenStore, userId: string, clientId: string): Promise<{ consented: boolean, grants: number }> {
  const consented = (await store.getConsent(userId, clientId)).length > 0
  await store.forgetConsent(userId, clientId)
  const grants = (await revokeUserGrants(store, userId, (grant) => grant.clientId === clientId)).length
  return { consented, grants }
}
