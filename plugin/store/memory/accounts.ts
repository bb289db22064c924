import { ExpiringMap } from './expiring-map.ts'
import type { SessionRecord, UserRecord } from '../records.ts'
import type { AccountStore } from '../roles.ts'

/** Sessions kept at most; past it the oldest go first (a flood cannot grow them). */
const MAX_SESSIONS = 100_000

/** The embedded store's users and their sessions. */
export class MemoryAccounts implements AccountStore {
  readonly #users = new Map<string, UserRecord>()
  readonly #sessions: ExpiringMap<SessionRecord>

  constructor (clock: () => number) {
    this.#sessions = new ExpiringMap(clock, MAX_SESSIONS)
  }

  async createUser (user: UserRecord): Promise<boolean> {
    if (this.#users.has(user.username)) return false
    this.#users.set(user.username, structuredClone(user))
    return true
  }

  async getUserByName (username: string): Promise<UserRecord | undefined> {
    const user = this.#users.get(username)
    return user && structuredClone(user)
  }

  async updateUser (user: UserRecord): Promise<boolean> {
    if (!this.#users.has(user.username)) return false
    this.#users.set(user.username, structuredClone(user))
    return true
  }

  async removeUser (username: string): Promise<UserRecord | undefined> {
    const user = this.#users.get(username)
    if (user === undefined) return undefined
    this.#users.delete(username)
    this.#endSessions(user.id)
    return structuredClone(user)
  }

  async saveSession (sessionHash: string, session: SessionRecord): Promise<void> {
    this.#sessions.set(sessionHash, structuredClone(session), session.expiresAt)
  }

  async getSession (sessionHash: string, userId: string): Promise<SessionRecord | undefined> {
    const session = this.#sessions.get(sessionHash)
    return session?.userId === userId ? structuredClone(session) : undefined
  }

  async endSessions (userId: string, sessionHash?: string): Promise<void> {
    this.#endSessions(userId, sessionHash)
  }

  sweep (): void {
    this.#sessions.sweep()
  }

  #endSessions (userId: string, sessionHash?: string): void {
    if (sessionHash !== undefined) {
      if (this.#sessions.get(sessionHash)?.userId === userId) this.#sessions.delete(sessionHash)
      return
    }
    for (const [hash, session] of this.#sessions.entries()) if (session.userId === userId) this.#sessions.delete(hash)
  }
}
