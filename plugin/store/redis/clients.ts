import { clientOrigins } from '../../http/origins.ts'
import { storedClient, withChanges } from '../records.ts'
import type { ClientChanges, ClientRecord, OriginClient } from '../records.ts'
import type { ClientStore } from '../roles.ts'
import { parse, type RedisContext } from './context.ts'
import type { RedisGrants } from './grants.ts'
import { RedisPart } from './part.ts'

/** The Redis store's clients and their origin index, all in the `{clients}` slot. */
export class RedisClients extends RedisPart implements ClientStore {
  readonly #grants: RedisGrants

  constructor (context: RedisContext, grants: RedisGrants) {
    super(context)
    this.#grants = grants
  }

  async saveClient (client: ClientRecord): Promise<void> {
    const { redis, keys, answer } = this.context
    await answer('macgateSaveClient', redis.macgateSaveClient(
      keys.client(client.id), keys.clientIndex(), keys.originsOf(client.id),
      client.id, JSON.stringify(client), keys.originPrefix(), originMember(client), ...clientOrigins(client)))
  }

  async updateClient (clientId: string, changes: ClientChanges): Promise<ClientRecord | undefined> {
    const client = await this.getClient(clientId)
    if (client === undefined) return undefined
    // The secret fields are the script's to keep: a rotation since the read is not undone.
    const updated = withChanges(client, changes)
    const { redis, keys, answer } = this.context
    return clientOf(await answer('macgateUpdateClient', redis.macgateUpdateClient(
      keys.client(clientId), keys.originsOf(clientId),
      clientId, JSON.stringify(updated), keys.originPrefix(), originMember(updated), ...clientOrigins(updated))) as string | null)
  }

  async clientsOfOrigin (origin: string): Promise<OriginClient[]> {
    const { redis, keys, answer } = this.context
    const members = await answer('smembers', redis.smembers(keys.originPrefix() + origin))
    return members.map((member) => ({ clientId: member.slice(2), public: member.startsWith('p:') }))
  }

  async getClient (clientId: string): Promise<ClientRecord | undefined> {
    const { redis, keys, answer } = this.context
    return clientOf(await answer('get', redis.get(keys.client(clientId))))
  }

  async listClients (): Promise<ClientRecord[]> {
    const { redis, keys, answer } = this.context
    const ids = (await answer('smembers', redis.smembers(keys.clientIndex()))).sort()
    if (ids.length === 0) return []
    const records = await answer('mget', redis.mget(ids.map((id) => keys.client(id))))
    return records.flatMap((record) => record === null ? [] : [storedClient(JSON.parse(record) as ClientRecord)])
  }

  async rotateClientSecret (clientId: string, secretHash: string, previousUntil: number): Promise<ClientRecord | undefined> {
    const { redis, keys, answer } = this.context
    return clientOf(await answer('macgateRotateSecret', redis.macgateRotateSecret(keys.client(clientId), secretHash, previousUntil)) as string | null)
  }

  async removeClient (clientId: string): Promise<boolean> {
    const { redis, keys, answer } = this.context
    const removed = await answer('macgateRemoveClient', redis.macgateRemoveClient(keys.client(clientId), keys.clientIndex(), keys.originsOf(clientId), clientId, keys.originPrefix()))
    if (removed === 0) return false
    // Each grant lives in its own slot: revoke them one by one, each atomically.
    const grantsKey = keys.clientGrants(clientId)
    for (const grantId of await answer('zrange', redis.zrange(grantsKey, '0', '-1'))) await this.#grants.revokeGrant(grantId)
    await answer('del', redis.del(grantsKey, keys.clientConsenters(clientId)))
    return true
  }
}

/** A client's stored JSON as its record (one saved before grant types gets them). */
function clientOf (json: string | null): ClientRecord | undefined {
  const client = parse<ClientRecord>(json)
  return client && storedClient(client)
}

/** The client's member in an origin's set: whether it is public, then its id. */
function originMember (client: ClientRecord): string {
  return `${client.public === true ? 'p' : 'c'}:${client.id}`
}
