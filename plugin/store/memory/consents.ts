import type { Consent } from '../records.ts'
import type { ConsentStore } from '../roles.ts'

/** The embedded store's consents: per (user, client) the scopes, per user when each client was allowed. */
export class MemoryConsents implements ConsentStore {
  readonly #clock: () => number
  readonly #scopes = new Map<string, Set<string>>()
  /** Per user: client id → when they last consented. */
  readonly #times = new Map<string, Map<string, number>>()
  /** Per client: the users who consented to it. */
  readonly #consenters = new Map<string, Set<string>>()

  constructor (clock: () => number) {
    this.#clock = clock
  }

  async getConsent (userId: string, clientId: string): Promise<string[]> {
    return [...(this.#scopes.get(`${userId}:${clientId}`) ?? [])]
  }

  async addConsent (userId: string, clientId: string, scopes: string[]): Promise<void> {
    const key = `${userId}:${clientId}`
    const granted = this.#scopes.get(key) ?? new Set()
    for (const scope of scopes) granted.add(scope)
    this.#scopes.set(key, granted)
    if (scopes.length === 0) return
    this.#times.set(userId, (this.#times.get(userId) ?? new Map<string, number>()).set(clientId, this.#clock()))
    this.#consenters.set(clientId, (this.#consenters.get(clientId) ?? new Set()).add(userId))
  }

  async listConsents (userId: string): Promise<Consent[]> {
    const times = [...this.#times.get(userId) ?? []]
    return times.map(([clientId, grantedAt]) => ({ clientId, scopes: [...this.#scopes.get(`${userId}:${clientId}`) ?? []].sort(), grantedAt }))
      .sort((a, b) => b.grantedAt - a.grantedAt)
  }

  async forgetConsent (userId: string, clientId: string): Promise<void> {
    this.#scopes.delete(`${userId}:${clientId}`)
    const times = this.#times.get(userId)
    times?.delete(clientId)
    if (times?.size === 0) this.#times.delete(userId)
    const consenters = this.#consenters.get(clientId)
    consenters?.delete(userId)
    if (consenters?.size === 0) this.#consenters.delete(clientId)
  }

  async countConsents (clientId: string): Promise<number> {
    return this.#consenters.get(clientId)?.size ?? 0
  }

  /** A removed client's count goes with it. */
  forgetClient (clientId: string): void {
    this.#consenters.delete(clientId)
  }
}
