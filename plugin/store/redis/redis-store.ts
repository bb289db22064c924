import type { RedisOptions } from 'ioredis'
import { errors } from '../../core/errors.js'
import type { NonceUse } from '../nonce-key.js'
import type {
  AccessTokenRecord, ClientChanges, ClientRecord, CodeRecord, Consent, CountedUse, HitCount, NonceStats, OriginClient, QuotaCount, RedeemResult,
  RefreshTokenRecord, RevocationListener, RotateResult, RotationGrace, SessionRecord, TokenRecords, UserGrant, UserRecord
} from '../records.js'
import type { Store } from '../roles.js'
import { RedisAccounts } from './accounts.js'
import { RedisClients } from './clients.js'
import { openClient, type RedisTarget } from './connection.js'
import { RedisConsents } from './consents.js'
import { RedisContext, type CommandObserver, type Scripted } from './context.js'
import { RedisGrantIndex } from './grant-index.js'
import { RedisGrants } from './grants.js'
import { RedisHitCounters } from './hit-counters.js'
import { RedisKeys } from './keys.js'
import { RedisNonces } from './nonces.js'
import { RevocationFeed } from './revocation-feed.js'
import { scripts } from './scripts.js'

export type { RedisTarget } from './connection.js'
export type { CommandObserver } from './context.js'

export interface RedisStoreOptions {
  /** Prepended to every key and channel, so that several deployments or tests share a Redis. */
  prefix?: string
  /** A command not answered within this time fails (the gateway answers 503), in ms. */
  commandTimeout?: number
  redisOptions?: RedisOptions
  /** The store's clock, in Unix ms: records' lifetimes, grant and consent times, the nonce sets' (tests step it). */
  clock?: () => number
}

/**
 * The shared store: every gateway instance on one Redis (or one Redis Cluster) sees the same
 * records. One part per role (this folder), on one client and one key scheme (`keys.ts`); every
 * command's answer is awaited through `RedisContext.answer`, where an outage becomes a 503.
 */
export class RedisStore implements Store {
  readonly kind = 'redis'
  readonly redis: Scripted
  readonly prefix: string
  readonly #context: RedisContext
  readonly #feed: RevocationFeed
  readonly #clients: RedisClients
  readonly #accounts: RedisAccounts
  readonly #consents: RedisConsents
  readonly #grantIndex: RedisGrantIndex
  readonly #grants: RedisGrants
  /** The replay memory: sets per tag and minute, one script call per event-loop turn (per slot on a cluster). */
  readonly #nonces: RedisNonces
  readonly #hits: RedisHitCounters

  constructor (target: RedisTarget, { prefix = 'macgate:', commandTimeout = 2000, redisOptions = {}, clock = Date.now }: RedisStoreOptions = {}) {
    this.prefix = prefix
    const { client, subscriberCandidates } = openClient(target, commandTimeout, redisOptions)
    this.redis = client as Scripted
    // A failed connection is retried by ioredis and reported per command; keep it off stderr.
    this.redis.on('error', () => {})
    for (const [name, definition] of Object.entries(scripts)) this.redis.defineCommand(name, definition)
    const keys = new RedisKeys(prefix)
    const context = new RedisContext(this.redis, keys, clock)
    this.#context = context
    this.#feed = new RevocationFeed(keys.revocationChannel, subscriberCandidates, (hashes) => this.#grants.notify(hashes))
    this.#grants = new RedisGrants(context, this.#feed)
    this.#clients = new RedisClients(context, this.#grants)
    this.#accounts = new RedisAccounts(context)
    this.#consents = new RedisConsents(context)
    this.#grantIndex = new RedisGrantIndex(context)
    this.#hits = new RedisHitCounters(context)
    // On a cluster a script's keys must share a slot: the nonce batch goes out per slot.
    this.#nonces = new RedisNonces(this.redis, prefix, { perSlot: typeof target !== 'string', observer: () => context.observer, clock })
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
      await this.#nonces.start()
    } catch (error) {
      // Otherwise ioredis keeps reconnecting and holds the process open.
      this.redis.disconnect()
      throw errors.storeUnavailable(undefined, { cause: reason ?? error })
    } finally {
      this.redis.off('error', remember)
    }
    return this
  }

  // Clients (clients.ts)
  saveClient (client: ClientRecord): Promise<void> { return this.#clients.saveClient(client) }
  getClient (clientId: string): Promise<ClientRecord | undefined> { return this.#clients.getClient(clientId) }
  listClients (): Promise<ClientRecord[]> { return this.#clients.listClients() }
  rotateClientSecret (clientId: string, secretHash: string, previousUntil: number): Promise<ClientRecord | undefined> { return this.#clients.rotateClientSecret(clientId, secretHash, previousUntil) }
  updateClient (clientId: string, changes: ClientChanges): Promise<ClientRecord | undefined> { return this.#clients.updateClient(clientId, changes) }
  removeClient (clientId: string): Promise<boolean> { return this.#clients.removeClient(clientId) }
  clientsOfOrigin (origin: string): Promise<OriginClient[]> { return this.#clients.clientsOfOrigin(origin) }

  // Users and sessions (accounts.ts)
  createUser (user: UserRecord): Promise<boolean> { return this.#accounts.createUser(user) }
  getUserByName (username: string): Promise<UserRecord | undefined> { return this.#accounts.getUserByName(username) }
  updateUser (user: UserRecord): Promise<boolean> { return this.#accounts.updateUser(user) }
  removeUser (username: string): Promise<UserRecord | undefined> { return this.#accounts.removeUser(username) }
  saveSession (sessionHash: string, session: SessionRecord): Promise<void> { return this.#accounts.saveSession(sessionHash, session) }
  getSession (sessionHash: string, userId: string): Promise<SessionRecord | undefined> { return this.#accounts.getSession(sessionHash, userId) }
  endSessions (userId: string, sessionHash?: string): Promise<void> { return this.#accounts.endSessions(userId, sessionHash) }

  // Consents (consents.ts)
  getConsent (userId: string, clientId: string): Promise<string[]> { return this.#consents.getConsent(userId, clientId) }
  addConsent (userId: string, clientId: string, scopes: string[]): Promise<void> { return this.#consents.addConsent(userId, clientId, scopes) }
  listConsents (userId: string): Promise<Consent[]> { return this.#consents.listConsents(userId) }
  forgetConsent (userId: string, clientId: string): Promise<void> { return this.#consents.forgetConsent(userId, clientId) }

  // Grant indexes (grant-index.ts)
  trackGrant (clientId: string, grantId: string, until: number, userId: string): Promise<void> { return this.#grantIndex.trackGrant(clientId, grantId, until, userId) }
  listUserGrants (userId: string): Promise<UserGrant[]> { return this.#grantIndex.listUserGrants(userId) }
  forgetUserGrant (userId: string, clientId: string, grantId: string): Promise<void> { return this.#grantIndex.forgetUserGrant(userId, clientId, grantId) }

  // Codes, tokens and revocations (grants.ts)
  saveCode (codeHash: string, code: CodeRecord): Promise<void> { return this.#grants.saveCode(codeHash, code) }
  getCode (codeHash: string, grantId: string): Promise<CodeRecord | undefined> { return this.#grants.getCode(codeHash, grantId) }
  redeemCode (codeHash: string, tokens: TokenRecords): Promise<RedeemResult> { return this.#grants.redeemCode(codeHash, tokens) }
  saveTokens (tokens: TokenRecords): Promise<void> { return this.#grants.saveTokens(tokens) }
  getAccessToken (tokenHash: string, grantId: string): Promise<AccessTokenRecord | undefined> { return this.#grants.getAccessToken(tokenHash, grantId) }
  getRefreshToken (tokenHash: string, grantId: string): Promise<RefreshTokenRecord | undefined> { return this.#grants.getRefreshToken(tokenHash, grantId) }
  rotateRefreshToken (tokenHash: string, tokens: TokenRecords, grace?: RotationGrace): Promise<RotateResult> { return this.#grants.rotateRefreshToken(tokenHash, tokens, grace) }
  revokeGrant (grantId: string): Promise<string[]> { return this.#grants.revokeGrant(grantId) }
  onRevocation (listener: RevocationListener): Promise<void> { return this.#grants.onRevocation(listener) }

  // Nonces and quota counters (nonces.ts): in the nonce batch's script call on a single Redis.
  useNonce (use: NonceUse): Promise<boolean> { return this.#nonces.use(use) }
  useCountedNonce (use: NonceUse, count: QuotaCount): Promise<CountedUse> { return this.#nonces.useCounted(use, count) }
  quotaUsed (names: string[], window: number): Promise<number[]> { return this.#nonces.quotaUsed(names, window) }
  nonceStats (): Promise<NonceStats> { return this.#nonces.stats() }

  // Rate-limit counters (hit-counters.ts)
  countHit (key: string, windowMs: number): Promise<HitCount> { return this.#hits.countHit(key, windowMs) }
  readHits (key: string): Promise<HitCount> { return this.#hits.readHits(key) }

  async serverSecret (proposed: string): Promise<string> {
    const { redis, keys, answer } = this.#context
    return await answer('macgateServerSecret', redis.macgateServerSecret(keys.serverSecret, proposed)) as string
  }

  /** Every command from now on is reported to `observer` (the plugin's store latency metric). */
  observeCommands (observer: CommandObserver): void {
    this.#context.observer = observer
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
