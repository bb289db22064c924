import type { RedisContext } from './context.ts'

/**
 * A role of the Redis store: each works through the one context the store shares among its roles
 * (client, keys, clock, `answer`), held here so that every role holds it the same way.
 */
export abstract class RedisPart {
  protected readonly context: RedisContext

  constructor (context: RedisContext) {
    this.context = context
  }
}
