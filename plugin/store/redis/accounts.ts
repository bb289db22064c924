import { secondsUntil } from '../records.ts'
import type { SessionRecord, UserRecord } from '../records.ts'
import type { AccountStore } from '../roles.ts'
import { parse } from './context.ts'
import { RedisPart } from './part.ts'

/** The Redis store's users (a key each), and their sessions with each user's index of them (`{u:user}`). */
export class RedisAccounts extends RedisPart implements AccountStore {
  async createUser (user: UserRecord): Promise<boolean> {
    const { redis, keys, answer } = this.context
    return await answer('set', redis.set(keys.user(user.username), JSON.stringify(user), 'NX')) === 'OK'
  }

  async getUserByName (username: string): Promise<UserRecord | undefined> {
    const { redis, keys, answer } = this.context
    return parse(await answer('get', redis.get(keys.user(username))))
  }

  async updateUser (user: UserRecord): Promise<boolean> {
    const { redis, keys, answer } = this.context
    return await answer('set', redis.set(keys.user(user.username), JSON.stringify(user), 'XX')) === 'OK'
  }

  async removeUser (username: string): Promise<UserRecord | undefined> {
    const { redis, keys, answer } = this.context
    const user = parse<UserRecord>(await answer('getdel', redis.getdel(keys.user(username))))
    if (user !== undefined) await this.endSessions(user.id)
    return user
  }

  async saveSession (sessionHash: string, session: SessionRecord): Promise<void> {
    const { redis, keys, answer, clock } = this.context
    const ttl = secondsUntil(session.expiresAt, clock())
    await answer('macgateSaveSession', redis.macgateSaveSession(keys.session(session.userId, sessionHash), keys.sessions(session.userId), sessionHash, JSON.stringify(session), ttl))
  }

  async getSession (sessionHash: string, userId: string): Promise<SessionRecord | undefined> {
    const { redis, keys, answer } = this.context
    return parse(await answer('get', redis.get(keys.session(userId, sessionHash))))
  }

  async endSessions (userId: string, sessionHash?: string): Promise<void> {
    const { redis, keys, answer } = this.context
    await answer('macgateEndSessions', redis.macgateEndSessions(keys.sessions(userId), keys.session(userId, ''), sessionHash ?? ''))
  }
}
