import { clientOrigins } from '../../http/origins.ts'
import { storedClient, withChanges } from '../records.ts'
import type { ClientChanges, ClientRecord, OriginClient } from '../records.ts'
import type { ClientStore } from '../roles.ts'
import type { MemoryGrantIndex } from './grant-index.ts'
import type { MemoryGrants } from './grants.ts'
import type { MemoryConsents } from './consents.ts'

/** The embedded store's clients and the index of their origins; removing one revokes its grants. */
export class MemoryClients implements ClientStore {
  readonly #clients = new Map<string, ClientRecord>()
  /** Per origin: the clients that registered it, each with whether it is public. */
  readonly #originClients = new Map<string, Map<string, boolean>>()
  readonly #grantIndex: MemoryGrantIndex
  readonly #grants: MemoryGrants
  readonly #consents: MemoryConsents

  constructor (grantIndex: MemoryGrantIndex, grants: MemoryGrants, consents: MemoryConsents) {
    this.#grantIndex = grantIndex
    this.#grants = grants
    this.#consents = consents
  }

  async saveClient (client: ClientRecord): Promise<void> {
    this.#save(client)
  }

  async updateClient (clientId: string, changes: ClientChanges): Promise<ClientRecord | undefined> {
    const client = this.#clients.get(clientId)
    if (client === undefined) return undefined
    const updated = withChanges(client, structuredClone(changes))
    this.#save(updated)
    return structuredClone(updated)
  }

  async clientsOfOrigin (origin: string): Promise<OriginClient[]> {
    return [...this.#originClients.get(origin) ?? []].map(([clientId, isPublic]) => ({ clientId, public: isPublic }))
  }

  async getClient (clientId: string): Promise<ClientRecord | undefined> {
    const client = this.#clients.get(clientId)
    return client && structuredClone(client)
  }

  async listClients (): Promise<ClientRecord[]> {
    return [...this.#clients.values()].map((client) => structuredClone(client))
  }

  async rotateClientSecret (clientId: string, secretHash: string, previousUntil: number): Promise<ClientRecord | undefined> {
    const client = this.#clients.get(clientId)
    if (client === undefined) return undefined
    Object.assign(client, { previousSecretHash: client.secretHash, previousSecretUntil: previousUntil, secretHash })
    return structuredClone(client)
  }

  async removeClient (clientId: string): Promise<boolean> {
    this.#indexOrigins(this.#clients.get(clientId), undefined)
    if (!this.#clients.delete(clientId)) return false
    for (const grantId of this.#grantIndex.takeClientGrants(clientId)) this.#grants.revoke(grantId)
    this.#consents.forgetClient(clientId)
    return true
  }

  #save (client: ClientRecord): void {
    this.#indexOrigins(this.#clients.get(client.id), client)
    this.#clients.set(client.id, structuredClone(storedClient(client)))
  }

  /** Moves the client's entries in the origin index from its old record's origins to its new one's. */
  #indexOrigins (old: ClientRecord | undefined, updated: ClientRecord | undefined): void {
    for (const origin of old === undefined ? [] : clientOrigins(old)) {
      const clients = this.#originClients.get(origin)
      clients?.delete(old!.id)
      if (clients?.size === 0) this.#originClients.delete(origin)
    }
    for (const origin of updated === undefined ? [] : clientOrigins(updated)) {
      const clients = this.#originClients.get(origin) ?? new Map<string, boolean>()
      this.#originClients.set(origin, clients.set(updated!.id, updated!.public === true))
    }
  }
}
