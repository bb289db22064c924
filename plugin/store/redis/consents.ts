import type { Consent } from '../records.ts'
import type { ConsentStore } from '../roles.ts'
import { RedisPart } from './part.ts'

/** The Redis store's consents: a set of scopes per (user, client), and per user a hash of when, in the user's slot; per client the set of users who consented, in the client's. */
export class RedisConsents extends RedisPart implements ConsentStore {
  async getConsent (userId: string, clientId: string): Promise<string[]> {
    const { redis, keys, answer } = this.context
    return await answer('smembers', redis.smembers(keys.consent(userId, clientId)))
  }

  async addConsent (userId: string, clientId: string, scopes: string[]): Promise<void> {
    if (scopes.length === 0) return
    const { redis, keys, answer, clock } = this.context
    await answer('macgateAddConsent', redis.macgateAddConsent(keys.consent(userId, clientId), keys.consents(userId), clientId, clock(), ...scopes))
    // The client's count lives in the client's slot, not the user's: a second command, idempotent
    // like the first (a retry after a failure between them counts the user once).
    await answer('sadd', redis.sadd(keys.clientConsenters(clientId), userId))
  }

  async listConsents (userId: string): Promise<Consent[]> {
    const { redis, keys, answer } = this.context
    const index = await answer('hgetall', redis.hgetall(keys.consents(userId)))
    const consents = await Promise.all(Object.entries(index).map(async ([clientId, grantedAt]) => ({ clientId, scopes: (await this.getConsent(userId, clientId)).sort(), grantedAt: Number(grantedAt) })))
    return consents.sort((a, b) => b.grantedAt - a.grantedAt)
  }

  async forgetConsent (userId: string, clientId: string): Promise<void> {
    const { redis, keys, answer } = this.context
    await answer('macgateForgetConsent', redis.macgateForgetConsent(keys.consent(userId, clientId), keys.consents(userId), clientId))
    await answer('srem', redis.srem(keys.clientConsenters(clientId), userId))
  }

  async countConsents (clientId: string): Promise<number> {
    const { redis, keys, answer } = this.context
    return await answer('scard', redis.scard(keys.clientConsenters(clientId)))
  }
}
