import { userGrantMember, userGrantOf } from '../records.ts'
import type { UserGrant } from '../records.ts'
import type { GrantIndex } from '../roles.ts'

/** Per owner (a client or a user): member → until when the grant may have live records. */
type Index = Map<string, Map<string, number>>

/** The embedded store's grant indexes: per client its grant ids, per user `clientId:grantId`. */
export class MemoryGrantIndex implements GrantIndex {
  readonly #clock: () => number
  readonly #byClient: Index = new Map()
  readonly #byUser: Index = new Map()

  constructor (clock: () => number) {
    this.#clock = clock
  }

  async trackGrant (clientId: string, grantId: string, until: number, userId: string): Promise<void> {
    extendUntil(this.#byClient, clientId, grantId, until)
    extendUntil(this.#byUser, userId, userGrantMember(clientId, grantId), until)
  }

  async listUserGrants (userId: string): Promise<UserGrant[]> {
    const now = this.#clock()
    return [...this.#byUser.get(userId) ?? []].filter(([, until]) => until > now).map(([member, until]) => userGrantOf(member, until))
  }

  async forgetUserGrant (userId: string, clientId: string, grantId: string): Promise<void> {
    const grants = this.#byUser.get(userId)
    grants?.delete(userGrantMember(clientId, grantId))
    if (grants?.size === 0) this.#byUser.delete(userId)
  }

  /** Takes the client's grant ids out of its index (the client is being removed). */
  takeClientGrants (clientId: string): string[] {
    const grants = [...this.#byClient.get(clientId)?.keys() ?? []]
    this.#byClient.delete(clientId)
    return grants
  }

  /** Forgets grants whose time has passed. */
  sweep (): void {
    const now = this.#clock()
    for (const index of [this.#byClient, this.#byUser]) {
      for (const [owner, grants] of index) {
        for (const [member, until] of grants) if (until <= now) grants.delete(member)
        if (grants.size === 0) index.delete(owner)
      }
    }
  }
}

/** Sets a grant's time in an owner's index; a later call may only extend it. */
function extendUntil (index: Index, owner: string, member: string, until: number): void {
  const grants = index.get(owner) ?? new Map<string, number>()
  index.set(owner, grants.set(member, Math.max(until, grants.get(member) ?? 0)))
}
