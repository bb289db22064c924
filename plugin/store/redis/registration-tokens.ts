import type { RegistrationTokenRecord } from '../records.ts'
import type { RegistrationTokens } from '../roles.ts'
import { RedisPart } from './part.ts'

/**
 * The Redis store's initial access tokens, in the `{regtokens}` slot: a hash per token under the
 * hash of its value, expiring with it, and an index from id to hash for listing and revoking (an
 * entry whose token has expired is dropped when the list finds it gone).
 */
export class RedisRegistrationTokens extends RedisPart implements RegistrationTokens {
  async saveRegistrationToken (token: RegistrationTokenRecord): Promise<void> {
    const { redis, keys, answer } = this.context
    await answer('macgateSaveRegistrationToken', redis.macgateSaveRegistrationToken(
      keys.registrationTokenPrefix() + token.hash, keys.registrationTokenIndex(), token.id, token.hash, token.uses, token.expiresAt, token.createdAt))
  }

  async listRegistrationTokens (): Promise<RegistrationTokenRecord[]> {
    const { redis, keys, answer } = this.context
    const index = await answer('hgetall', redis.hgetall(keys.registrationTokenIndex()))
    const tokens: RegistrationTokenRecord[] = []
    for (const [id, hash] of Object.entries(index)) {
      const fields = await answer('hgetall', redis.hgetall(keys.registrationTokenPrefix() + hash))
      if (fields.id === undefined) {
        await answer('hdel', redis.hdel(keys.registrationTokenIndex(), id))
        continue
      }
      tokens.push({ id, hash, uses: Number(fields.uses), usesLeft: Number(fields.usesLeft), expiresAt: Number(fields.expiresAt), createdAt: Number(fields.createdAt) })
    }
    return tokens
  }

  async revokeRegistrationToken (id: string): Promise<boolean> {
    const { redis, keys, answer } = this.context
    return await answer('macgateRevokeRegistrationToken', redis.macgateRevokeRegistrationToken(keys.registrationTokenIndex(), keys.registrationTokenPrefix(), id)) === 1
  }

  async useRegistrationToken (hash: string, now: number): Promise<string | undefined> {
    const { redis, keys, answer } = this.context
    const id = await answer('macgateUseRegistrationToken', redis.macgateUseRegistrationToken(keys.registrationTokenPrefix() + hash, keys.registrationTokenIndex(), now))
    return typeof id === 'string' ? id : undefined
  }
}
