// The operator's actions on a user's grants: list them, revoke one.
import { revokeUserGrants } from '../account/authorized-apps.ts'
import type { AccountStore, ClientReader, GrantIndex, TokenStore, UserGrant } from '../store/store.ts'
import type { AuditEvents } from '../observe/events.ts'
import { NoSuchRecordError } from './refusals.ts'

/** The user's grants that may still have live records (those of clients removed since, revoked with them, left out). */
export async function listUserGrants (store: AccountStore & GrantIndex & ClientReader, username: string): Promise<UserGrant[]> {
  const user = await store.getUserByName(username)
  if (user === undefined) throw new NoSuchRecordError(`no user ${username}`)
  const grants = await store.listUserGrants(user.id)
  const clients = new Set<string>()
  for (const clientId of new Set(grants.map((grant) => grant.clientId))) if (await store.getClient(clientId) !== undefined) clients.add(clientId)
  return grants.filter((grant) => clients.has(grant.clientId))
}

/** Revokes one grant of the user's (by its id), on every instance. */
export async function revokeUserGrant (store: AccountStore & GrantIndex & TokenStore, username: string, grantId: string, events?: AuditEvents): Promise<void> {
  const user = await store.getUserByName(username)
  if (user === undefined) throw new NoSuchRecordError(`no user ${username}`)
  const [grant] = await revokeUserGrants(store, user.id, (one) => one.grantId === grantId)
  if (grant === undefined) throw new NoSuchRecordError(`user ${username} has no grant ${grantId}`)
  events?.record('grant.revoked', { grantId, clientId: grant.clientId, by: 'operator' })
}
