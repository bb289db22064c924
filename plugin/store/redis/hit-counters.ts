import type { HitCount } from '../records.ts'
import type { HitCounters } from '../roles.ts'
import { RedisPart } from './part.ts'

/** The Redis store's rate-limit counters: a key each, expiring with its window, shared by every instance. */
export class RedisHitCounters extends RedisPart implements HitCounters {
  async countHit (key: string, windowMs: number): Promise<HitCount> {
    const { redis, keys, answer } = this.context
    const [count, resetMs] = await answer('macgateCountHit', redis.macgateCountHit(keys.hits(key), windowMs)) as [number, number]
    return { count, resetMs: Math.max(0, resetMs) }
  }

  /** A plain GET: almost every read finds no counter, and only a counter needs its PTTL. */
  async readHits (key: string): Promise<HitCount> {
    const { redis, keys, answer } = this.context
    const counter = keys.hits(key)
    const count = Number(await answer('get', redis.get(counter)) ?? 0)
    if (count === 0) return { count: 0, resetMs: 0 }
    return { count, resetMs: Math.max(0, await answer('pttl', redis.pttl(counter))) }
  }
}
