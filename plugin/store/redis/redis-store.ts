import type { RedisOptions } from 'ioredis'
import { errors } from '../../http/errors.ts'
import { ComposedStore } from '../composed-store.ts'
import type { Store } from '../roles.ts'
import { RedisAccounts } from './accounts.ts'
import { RedisClients } from './clients.ts'
import { openClient, type RedisTarget } from './connection.ts'
import { RedisConsents } from './consents.ts'
import { RedisDeviceCodes } from './device-codes.ts'
import { RedisContext, type CommandObserver, type Scripted } from './context.ts'
import { RedisGrantIndex } from './grant-index.ts'
import { RedisGrants } from './grants.ts'
import { RedisHitCounters } from './hit-counters.ts'
import { RedisKeys } from './keys.ts'
import { RedisNonces } from './nonces.ts'
import { RedisRegistrationTokens } from './registration-tokens.ts'
import { RevocationFeed } from './revocation-feed.ts'
import { scripts } from './scripts.ts'

export type { RedisTarget } from './connection.ts'
export type { CommandObserver } from './context.ts'

export interface RedisStoreOptions {
  /** Prepended to every key and channel, so that several deployments or tests share a Redis. */
  prefix?: string
  /** A command not answered within this time fails (the gateway answers 503), in ms. */
  commandTimeout?: number
  /** ioredis's own options (TLS, a password, timeouts); not its `keyPrefix`: the store's `prefix` names every key. */
  redisOptions?: RedisOptions
  /** The store's clock, in Unix ms: records' lifetimes, grant and consent times, the nonce sets' (tests step it). */
  clock?: () => number
}

/**
 * The shared store: every gateway instance on one Redis (or one Redis Cluster) sees the same
 * records. One part per role (this folder), on one client and one key scheme (`keys.ts`); every
 * command's answer is awaited through `RedisContext.answer`, where an outage becomes a 503.
 */
export class RedisStore extends ComposedStore implements Store {
  readonly kind = 'redis'
  readonly redis: Scripted
  readonly prefix: string
  readonly #context: RedisContext
  readonly #feed: RevocationFeed

  constructor (target: RedisTarget, { prefix = 'macgate:', commandTimeout = 2000, redisOptions = {}, clock = Date.now }: RedisStoreOptions = {}) {
    // ioredis adds its keyPrefix only in its command methods: the hot path's commands (context.ts)
    // and the revocation feed's channel would miss it, and every token read would find nothing.
    if (redisOptions.keyPrefix !== undefined) throw new TypeError('redisOptions.keyPrefix is not supported: give the store a prefix (its `prefix` option), which every key and channel takes')
    const { client, subscriberCandidates } = openClient(target, commandTimeout, redisOptions)
    const redis = client as Scripted
    // A failed connection is retried by ioredis and reported per command; keep it off stderr.
    redis.on('error', () => {})
    for (const [name, definition] of Object.entries(scripts)) redis.defineCommand(name, definition)
    const keys = new RedisKeys(prefix)
    const context = new RedisContext(redis, keys, clock)
    const feed = new RevocationFeed(keys.revocationChannel, subscriberCandidates, (hashes) => grants.notify(hashes))
    const grants = new RedisGrants(context, feed)
    // The replay memory: sets per tag and minute, one script call per event-loop turn; on a cluster a
    // script's keys must share a slot, so the batch goes out per slot.
    const nonces = new RedisNonces(context, typeof target !== 'string')
    super()
    this.redis = redis
    this.prefix = prefix
    this.#context = context
    this.#feed = feed
    this.compose({
      clients: new RedisClients(context, grants),
      accounts: new RedisAccounts(context),
      consents: new RedisConsents(context),
      grantIndex: new RedisGrantIndex(context),
      grants,
      devices: new RedisDeviceCodes(context, grants),
      nonces,
      hits: new RedisHitCounters(context),
      registrationTokens: new RedisRegistrationTokens(context)
    })
  }

  /**
   * Connects, and fails when Redis cannot be reached at start. ioredis rejects with "Connection is
   * closed." and tells why (ECONNREFUSED, ENOTFOUND, WRONGPASS) only as an error event: that
   * reason, when there was one, is the failure's cause.
   */
  async connect (): Promise<this> {
    let reason: unknown
    const remember = (error: unknown): void => { reason = error }
    this.redis.on('error', remember)
    try {
      await this.redis.connect()
    } catch (error) {
      // Otherwise ioredis keeps reconnecting and holds the process open.
      this.redis.disconnect()
      throw errors.storeUnavailable(undefined, { cause: reason ?? error })
    } finally {
      this.redis.off('error', remember)
    }
    return this
  }

  async serverSecret (proposed: string): Promise<string> {
    const { redis, keys, answer } = this.#context
    return await answer('macgateServerSecret', redis.macgateServerSecret(keys.serverSecret, proposed)) as string
  }

  /** Every command from now on is reported to `observer` (the plugin's store latency metric); a nonce batch's waiters to it as `waiter` names them. */
  observeCommands (observer: CommandObserver, waiter?: () => unknown): void {
    this.#context.observer = observer
    this.#context.waiter = waiter
  }

  async ping (): Promise<void> {
    // Said plainly for the readiness probe, instead of the client's "stream isn't writeable".
    if (this.redis.status !== 'ready') throw errors.storeUnavailable(`not connected to Redis (the connection is ${this.redis.status})`)
    await this.#context.answer('ping', this.redis.ping())
  }

  /** Closes politely when Redis answers, and at once when it does not; never throws. */
  async close (): Promise<void> {
    this.#feed.close()
    try {
      if (this.redis.status === 'ready') {
        await this.redis.quit()
        return
      }
    } catch {}
    this.redis.disconnect()
  }
}
