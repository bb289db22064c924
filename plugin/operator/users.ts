// The operator's actions on users: create, change a password, allow the developer console, remove.
import { randomUUID } from 'node:crypto'
import { hashPassword, type ScryptCost } from '../account/password.ts'
import { revokeUserGrants } from '../account/authorized-apps.ts'
import type { AccountStore, ConsentStore, GrantIndex, TokenStore } from '../store/store.ts'
import type { AuditEvents } from '../observe/events.ts'
import { NoSuchRecordError, RegistrationError } from './refusals.ts'

const USERNAME = /^[A-Za-z0-9._@-]{1,64}$/

function checkPassword (password: string): void {
  if (password.length < 8 || password.length > 1024) throw new RegistrationError('password must be 8 to 1024 characters')
}

export interface NewUserOptions {
  events?: AuditEvents
  clock?: () => number
  /** The password hash's scrypt cost; the default unless a caller (a test's fixture users) needs it cheap. */
  passwordCost?: ScryptCost
}

export async function createUser (store: AccountStore, username: string, password: string, { events, clock = Date.now, passwordCost }: NewUserOptions = {}): Promise<{ userId: string }> {
  if (!USERNAME.test(username)) throw new RegistrationError('username must be 1 to 64 letters, digits or . _ @ -')
  checkPassword(password)
  const userId = randomUUID()
  const created = await store.createUser({ id: userId, username, passwordHash: await hashPassword(password, passwordCost), createdAt: clock() })
  if (!created) throw new RegistrationError(`username ${username} is taken`)
  events?.record('user.created', { userId, username })
  return { userId }
}

/** A new password; every session of the user ends on every instance (sign in again). */
export async function changePassword (store: AccountStore, username: string, password: string, events?: AuditEvents): Promise<void> {
  checkPassword(password)
  const user = await store.getUserByName(username)
  if (user === undefined || !await store.updateUser({ ...user, passwordHash: await hashPassword(password) })) {
    throw new NoSuchRecordError(`no user ${username}`)
  }
  await store.endSessions(user.id)
  events?.record('user.password_changed', { userId: user.id, username })
}
/** Allows (or stops) the user's developer console, where the deployment's `developerConsole` is `developers`. */
export async function setDeveloper (store: AccountStore, username: string, developer: boolean, events?: AuditEvents): Promise<void> {
  const user = await store.getUserByName(username)
  if (user === undefined) throw new NoSuchRecordError(`no user ${username}`)
  const { developer: _was, ...rest } = user
  if (!await store.updateUser(developer ? { ...rest, developer: true } : rest)) throw new NoSuchRecordError(`no user ${username}`)
  events?.record('user.developer_changed', { userId: user.id, username, developer })
}
/**
 * Removes the user: every session of theirs ends and every grant of theirs is revoked, on every
 * instance, and their consents are forgotten. Resolves to how many grants were revoked.
 */
export async function removeUser (store: AccountStore & ConsentStore & GrantIndex & TokenStore, username: string, events?: AuditEvents): Promise<{ userId: string, grants: number }> {
  const user = await store.getUserByName(username)
  if (user === undefined) throw new NoSuchRecordError(`no user ${username}`)
  // Sessions first (no new grant from a signed-in browser), the user record last: if the store fails
  // half-way, the user is still there and the same command finishes the job.
  await store.endSessions(user.id)
  const grants = (await revokeUserGrants(store, user.id)).length
  for (const { clientId } of await store.listConsents(user.id)) await store.forgetConsent(user.id, clientId)
  const removed = await store.removeUser(username)
  if (removed === undefined) throw new NoSuchRecordError(`no user ${username}`)
  events?.record('user.removed', { userId: user.id, username, grants })
  return { userId: user.id, grants }
}
