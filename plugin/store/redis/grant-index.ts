import { userGrantMember, userGrantOf } from '../records.ts'
import type { UserGrant } from '../records.ts'
import type { GrantIndex } from '../roles.ts'
import { RedisPart } from './part.ts'

/** The Redis store's grant indexes: sorted sets by until when, one per client and one per user. */
export class RedisGrantIndex extends RedisPart implements GrantIndex {
  /** Two indexes in two slots (the client's and the user's): each update is atomic, and either alone is harmless. */
  async trackGrant (clientId: string, grantId: string, until: number, userId: string): Promise<void> {
    const { redis, keys, answer, clock } = this.context
    const now = clock()
    await Promise.all([
      answer('macgateTrackGrant', redis.macgateTrackGrant(keys.clientGrants(clientId), grantId, until, now)),
      answer('macgateTrackGrant', redis.macgateTrackGrant(keys.userGrants(userId), userGrantMember(clientId, grantId), until, now))
    ])
  }

  async listUserGrants (userId: string): Promise<UserGrant[]> {
    const { redis, keys, answer, clock } = this.context
    const flat = await answer('zrangebyscore', redis.zrangebyscore(keys.userGrants(userId), clock(), '+inf', 'WITHSCORES'))
    const grants: UserGrant[] = []
    for (let i = 0; i < flat.length; i += 2) grants.push(userGrantOf(flat[i]!, Number(flat[i + 1])))
    return grants
  }

  async forgetUserGrant (userId: string, clientId: string, grantId: string): Promise<void> {
    const { redis, keys, answer } = this.context
    await answer('zrem', redis.zrem(keys.userGrants(userId), userGrantMember(clientId, grantId)))
  }
}
