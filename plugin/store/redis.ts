import { Cluster, Redis, type RedisOptions } from 'ioredis'
import { errors } from '../core/errors.js'
import { scripts, type ScriptName } from './redis-scripts.js'
import { RedisNonces } from './redis-nonces.js'
import { RevocationFeed } from './revocation-feed.js'
import { clientOrigins } from '../core/origins.js'
import { secondsUntil, userGrantMember, userGrantOf, withChanges } from './store.js'
import type { CountedUse, NonceStats, NonceUse, QuotaCount } from './store.js'
import type {
  AccessTokenRecord, ClientChanges, ClientRecord, CodeRecord, OriginClient, Consent, UserGrant, HitCount, RedeemResult, RefreshTokenRecord, RotateResult, RotationGrace,
  RevocationListener, SessionRecord, Store, TokenRecords, UserRecord
} from './store.js'

type ScriptArgument = string | number | Buffer
type Scripted = (Redis | Cluster) & Record<ScriptName, (...args: Array<ScriptArgument | ScriptArgument[]>) => Promise<unknown>>

/** A single Redis by its URL, or a Redis Cluster by some of its nodes (`host:port`). */
export type RedisTarget = string | { clusterNodes: string[] }

/** Told of every Redis command the store sends: its name, seconds until it settled, and whether it failed. */
export type CommandObserver = (command: string, seconds: number, failed: boolean) => void

export interface RedisStoreOptions {
  /** Prepended to every key and channel, so that several deployments or tests share a Redis. */
  prefix?: string
  /** A command not answered within this time fails (the gateway answers 503), in ms. */
  commandTimeout?: number
  redisOptions?: RedisOptions
}

/** The shared store: every gateway instance on one Redis sees the same records. */
export class RedisStore implements Store {
  readonly kind = 'redis'
  readonly redis: Scripted
  readonly prefix: string
  readonly #channel: string
  readonly #feed: RevocationFeed
  #subscribed: Promise<void> | undefined
  readonly #listeners: RevocationListener[] = []
  /** The replay memory: sets per tag and minute, one script call per event-loop turn (per slot on a cluster). */
  readonly #nonces: RedisNonces
  #observer: CommandObserver | undefined

  constructor (target: RedisTarget, { prefix = 'macgate:', commandTimeout = 2000, redisOptions = {} }: RedisStoreOptions = {}) {
    this.prefix = prefix
    this.#channel = `${prefix}revoked`
    // No offline queue: while Redis is away a command fails at once instead of piling up.
    const options: RedisOptions = {
      enableAutoPipelining: true,
      // Already one call per event-loop turn (per slot on a cluster): a pipeline would only add cost.
      // (The stats script, many keys of one tag, is kept out too: the pipeline would group it by its first.)
      autoPipeliningIgnoredCommands: ['macgateUseNonces', 'macgateNonceStats'],
      enableOfflineQueue: false,
      lazyConnect: true,
      commandTimeout,
      maxRetriesPerRequest: 1,
      retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
      ...redisOptions
    }
    if (typeof target === 'string') {
      const redis = new Redis(target, options)
      this.redis = redis as Scripted
      this.#feed = new RevocationFeed(this.#channel, () => [redis.options], (hashes) => this.#notify(hashes))
    } else {
      // Seeds are addresses only: every node's connection takes redisOptions below.
      const seeds = target.clusterNodes.map(parseNode)
      const cluster = new Cluster(seeds, {
        enableAutoPipelining: true,
        autoPipeliningIgnoredCommands: ['macgateUseNonces', 'macgateNonceStats'],
        enableOfflineQueue: false,
        lazyConnect: true,
        // The cluster client follows MOVED and a failover's new topology by itself.
        // Node connections keep ioredis's own offline queue and retries (it opens them on demand and
        // queues while they connect); the command timeout bounds every command.
        redisOptions: nodeOptions(options),
        clusterRetryStrategy: (attempt) => Math.min(attempt * 100, 1000),
        retryDelayOnFailover: 100,
        retryDelayOnClusterDown: 100,
        slotsRefreshTimeout: commandTimeout
      })
      this.redis = cluster as Scripted
      // Any node hears a plain PUBLISH: the ones the client knows now, else the seeds.
      const candidates = (): RedisOptions[] => {
        const known = cluster.nodes('all').map((node) => ({ ...options, host: node.options.host, port: node.options.port }))
        return known.length > 0 ? known : seeds.map((seed) => ({ ...options, ...seed }))
      }
      this.#feed = new RevocationFeed(this.#channel, candidates, (hashes) => this.#notify(hashes))
    }
    // A failed connection is retried by ioredis and reported per command; keep it off stderr.
    this.redis.on('error', () => {})
    for (const [name, definition] of Object.entries(scripts)) this.redis.defineCommand(name, definition)
    // On a cluster a script's keys must share a slot: the nonce batch goes out per slot.
    this.#nonces = new RedisNonces(this.redis, prefix, { perSlot: typeof target !== 'string', observer: () => this.#observer })
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

  async saveClient (client: ClientRecord): Promise<void> {
    await this.#reach('macgateSaveClient', this.redis.macgateSaveClient(
      this.#clientKey(client.id), this.#clientIndex(), this.#originsOfKey(client.id),
      client.id, JSON.stringify(client), this.#originPrefix(), originMember(client), ...clientOrigins(client)))
  }

  async updateClient (clientId: string, changes: ClientChanges): Promise<ClientRecord | undefined> {
    const client = await this.getClient(clientId)
    if (client === undefined) return undefined
    // The secret fields are the script's to keep: a rotation since the read is not undone.
    const updated = withChanges(client, changes)
    return parse(await this.#reach('macgateUpdateClient', this.redis.macgateUpdateClient(
      this.#clientKey(clientId), this.#originsOfKey(clientId),
      clientId, JSON.stringify(updated), this.#originPrefix(), originMember(updated), ...clientOrigins(updated))) as string | null)
  }

  async clientsOfOrigin (origin: string): Promise<OriginClient[]> {
    const members = await this.#reach('smembers', this.redis.smembers(this.#originPrefix() + origin))
    return members.map((member) => ({ clientId: member.slice(2), public: member.startsWith('p:') }))
  }

  async getClient (clientId: string): Promise<ClientRecord | undefined> {
    return parse(await this.#reach('get', this.redis.get(this.#clientKey(clientId))))
  }

  async listClients (): Promise<ClientRecord[]> {
    const ids = (await this.#reach('smembers', this.redis.smembers(this.#clientIndex()))).sort()
    if (ids.length === 0) return []
    const records = await this.#reach('mget', this.redis.mget(ids.map((id) => this.#clientKey(id))))
    return records.flatMap((record) => record === null ? [] : [JSON.parse(record) as ClientRecord])
  }

  async rotateClientSecret (clientId: string, secretHash: string, previousUntil: number): Promise<ClientRecord | undefined> {
    return parse(await this.#reach('macgateRotateSecret', this.redis.macgateRotateSecret(this.#clientKey(clientId), secretHash, previousUntil)) as string | null)
  }

  async removeClient (clientId: string): Promise<boolean> {
    const removed = await this.#reach('macgateRemoveClient', this.redis.macgateRemoveClient(this.#clientKey(clientId), this.#clientIndex(), this.#originsOfKey(clientId), clientId, this.#originPrefix()))
    if (removed === 0) return false
    // Each grant lives in its own slot: revoke them one by one, each atomically.
    const grantsKey = this.#grantsKey(clientId)
    for (const grantId of await this.#reach('zrange', this.redis.zrange(grantsKey, '0', '-1'))) await this.revokeGrant(grantId)
    await this.#reach('del', this.redis.del(grantsKey))
    return true
  }

  async createUser (user: UserRecord): Promise<boolean> {
    return await this.#reach('set', this.redis.set(this.#userKey(user.username), JSON.stringify(user), 'NX')) === 'OK'
  }

  async getUserByName (username: string): Promise<UserRecord | undefined> {
    return parse(await this.#reach('get', this.redis.get(this.#userKey(username))))
  }

  async updateUser (user: UserRecord): Promise<boolean> {
    return await this.#reach('set', this.redis.set(this.#userKey(user.username), JSON.stringify(user), 'XX')) === 'OK'
  }

  async removeUser (username: string): Promise<UserRecord | undefined> {
    const user = parse<UserRecord>(await this.#reach('getdel', this.redis.getdel(this.#userKey(username))))
    if (user !== undefined) await this.endSessions(user.id)
    return user
  }

  async saveSession (sessionHash: string, session: SessionRecord): Promise<void> {
    const ttl = secondsUntil(session.expiresAt)
    await this.#reach('macgateSaveSession', this.redis.macgateSaveSession(this.#sessionKey(session.userId, sessionHash), this.#sessionsKey(session.userId), sessionHash, JSON.stringify(session), ttl))
  }

  async getSession (sessionHash: string, userId: string): Promise<SessionRecord | undefined> {
    return parse(await this.#reach('get', this.redis.get(this.#sessionKey(userId, sessionHash))))
  }

  async endSessions (userId: string, sessionHash?: string): Promise<void> {
    await this.#reach('macgateEndSessions', this.redis.macgateEndSessions(this.#sessionsKey(userId), this.#sessionKey(userId, ''), sessionHash ?? ''))
  }

  async getConsent (userId: string, clientId: string): Promise<string[]> {
    return await this.#reach('smembers', this.redis.smembers(this.#consentKey(userId, clientId)))
  }

  async addConsent (userId: string, clientId: string, scopes: string[]): Promise<void> {
    if (scopes.length === 0) return
    await this.#reach('macgateAddConsent', this.redis.macgateAddConsent(this.#consentKey(userId, clientId), this.#consentsKey(userId), clientId, Date.now(), ...scopes))
  }

  async listConsents (userId: string): Promise<Consent[]> {
    const index = await this.#reach('hgetall', this.redis.hgetall(this.#consentsKey(userId)))
    const consents = await Promise.all(Object.entries(index).map(async ([clientId, grantedAt]) => ({ clientId, scopes: (await this.getConsent(userId, clientId)).sort(), grantedAt: Number(grantedAt) })))
    return consents.sort((a, b) => b.grantedAt - a.grantedAt)
  }

  async forgetConsent (userId: string, clientId: string): Promise<void> {
    await this.#reach('macgateForgetConsent', this.redis.macgateForgetConsent(this.#consentKey(userId, clientId), this.#consentsKey(userId), clientId))
  }

  /** Two indexes in two slots (the client's and the user's): each update is atomic, and either alone is harmless. */
  async trackGrant (clientId: string, grantId: string, until: number, userId: string): Promise<void> {
    const now = Date.now()
    await Promise.all([
      this.#reach('macgateTrackGrant', this.redis.macgateTrackGrant(this.#grantsKey(clientId), grantId, until, now)),
      this.#reach('macgateTrackGrant', this.redis.macgateTrackGrant(this.#userGrantsKey(userId), userGrantMember(clientId, grantId), until, now))
    ])
  }

  async listUserGrants (userId: string): Promise<UserGrant[]> {
    const flat = await this.#reach('zrangebyscore', this.redis.zrangebyscore(this.#userGrantsKey(userId), Date.now(), '+inf', 'WITHSCORES'))
    const grants: UserGrant[] = []
    for (let i = 0; i < flat.length; i += 2) grants.push(userGrantOf(flat[i]!, Number(flat[i + 1])))
    return grants
  }

  async forgetUserGrant (userId: string, clientId: string, grantId: string): Promise<void> {
    await this.#reach('zrem', this.redis.zrem(this.#userGrantsKey(userId), userGrantMember(clientId, grantId)))
  }

  async saveCode (codeHash: string, code: CodeRecord): Promise<void> {
    const member = `code:${codeHash}`
    const key = this.#grantPrefix(code.grantId) + member
    await this.#reach('macgateSaveCode', this.redis.macgateSaveCode(key, this.#members(code.grantId), JSON.stringify(code), secondsUntil(code.expiresAt), member))
  }

  async getCode (codeHash: string, grantId: string): Promise<CodeRecord | undefined> {
    const fields = await this.#reach('hgetall', this.redis.hgetall(`${this.#grantPrefix(grantId)}code:${codeHash}`))
    if (fields.record === undefined) return undefined
    return { ...JSON.parse(fields.record) as CodeRecord, ...(fields.used !== undefined && { used: true }) }
  }

  async redeemCode (codeHash: string, tokens: TokenRecords): Promise<RedeemResult> {
    const key = `${this.#grantPrefix(tokens.grantId)}code:${codeHash}`
    return await this.#reach('macgateRedeemCode', this.redis.macgateRedeemCode(key, this.#members(tokens.grantId), this.#channel, this.#tokenSet(tokens))) as RedeemResult
  }

  async saveTokens (tokens: TokenRecords): Promise<void> {
    await this.#reach('macgateSaveTokens', this.redis.macgateSaveTokens(this.#members(tokens.grantId), this.#tokenSet(tokens)))
  }

  async getAccessToken (tokenHash: string, grantId: string): Promise<AccessTokenRecord | undefined> {
    return parse(await this.#reach('get', this.redis.get(`${this.#grantPrefix(grantId)}at:${tokenHash}`)))
  }

  async getRefreshToken (tokenHash: string, grantId: string): Promise<RefreshTokenRecord | undefined> {
    const fields = await this.#reach('hgetall', this.redis.hgetall(`${this.#grantPrefix(grantId)}rt:${tokenHash}`))
    if (fields.record === undefined) return undefined
    return { ...JSON.parse(fields.record) as RefreshTokenRecord, ...(fields.spent !== undefined && { spent: true }) }
  }

  async rotateRefreshToken (tokenHash: string, tokens: TokenRecords, grace?: RotationGrace): Promise<RotateResult> {
    const key = `${this.#grantPrefix(tokens.grantId)}rt:${tokenHash}`
    const result = await this.#reach('macgateRotateRefresh', this.redis.macgateRotateRefresh(
      key, this.#members(tokens.grantId), this.#channel, this.#tokenSet(tokens), grace?.graceMs ?? 0, grace?.successor ?? '', `rs:${tokenHash}`
    )) as RedeemResult | ['grace', string]
    return Array.isArray(result) ? { successor: result[1] } : result
  }

  /** Every command from now on is reported to `observer` (the plugin's store latency metric). */
  observeCommands (observer: CommandObserver): void {
    this.#observer = observer
  }

  async ping (): Promise<void> {
    // Said plainly for the readiness probe, instead of the client's "stream isn't writeable".
    if (this.redis.status !== 'ready') throw errors.storeUnavailable(`not connected to Redis (the connection is ${this.redis.status})`)
    await this.#reach('ping', this.redis.ping())
  }

  /** `reach`, timed for the observer when there is one. */
  async #reach<T> (command: string, sent: Promise<T>): Promise<T> {
    const observer = this.#observer
    if (observer === undefined) return await reach(sent)
    const started = performance.now()
    try {
      const answer = await reach(sent)
      observer(command, (performance.now() - started) / 1000, false)
      return answer
    } catch (error) {
      observer(command, (performance.now() - started) / 1000, true)
      throw error
    }
  }

  async revokeGrant (grantId: string): Promise<string[]> {
    return await this.#reach('macgateRevokeGrant', this.redis.macgateRevokeGrant(this.#members(grantId), this.#grantPrefix(grantId), this.#channel)) as string[]
  }

  async onRevocation (listener: RevocationListener): Promise<void> {
    this.#listeners.push(listener)
    this.#subscribed ??= this.#feed.start()
    await reach(this.#subscribed)
  }

  #notify (hashes: string[] | null): void {
    for (const notify of this.#listeners) notify(hashes)
  }

  /** See `redis-nonces.ts`. */
  useNonce (use: NonceUse): Promise<boolean> {
    return this.#nonces.use(use)
  }

  /** See `redis-nonces.ts`: in the nonce batch's script call on a single Redis. */
  useCountedNonce (use: NonceUse, count: QuotaCount): Promise<CountedUse> {
    return this.#nonces.useCounted(use, count)
  }

  async quotaUsed (names: string[], window: number): Promise<number[]> {
    return await this.#nonces.quotaUsed(names, window)
  }

  async nonceStats (): Promise<NonceStats> {
    return await this.#nonces.stats()
  }

  async countHit (key: string, windowMs: number): Promise<HitCount> {
    const [count, resetMs] = await this.#reach('macgateCountHit', this.redis.macgateCountHit(`${this.prefix}hits:${key}`, windowMs)) as [number, number]
    return { count, resetMs: Math.max(0, resetMs) }
  }

  /** A plain GET: almost every read finds no counter, and only a counter needs its PTTL. */
  async readHits (key: string): Promise<HitCount> {
    const counter = `${this.prefix}hits:${key}`
    const count = Number(await this.#reach('get', this.redis.get(counter)) ?? 0)
    if (count === 0) return { count: 0, resetMs: 0 }
    return { count, resetMs: Math.max(0, await this.#reach('pttl', this.redis.pttl(counter))) }
  }

  async serverSecret (proposed: string): Promise<string> {
    return await this.#reach('macgateServerSecret', this.redis.macgateServerSecret(`${this.prefix}secret`, proposed)) as string
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

  /** The token set as the scripts' `save` reads it; lifetimes from the records' own expiry. */
  #tokenSet ({ grantId, access, refresh }: TokenRecords): string {
    const entry = (kind: 'at' | 'rt', { hash, record }: { hash: string, record: { expiresAt: number } }) =>
      ({ member: `${kind}:${hash}`, record: JSON.stringify(record), ttl: secondsUntil(record.expiresAt) })
    return JSON.stringify({
      prefix: this.#grantPrefix(grantId),
      access: entry('at', access),
      ...(refresh !== undefined && { refresh: entry('rt', refresh) })
    })
  }

  #grantPrefix (grantId: string): string {
    return `${this.prefix}{g:${grantId}}:`
  }

  #members (grantId: string): string {
    return `${this.#grantPrefix(grantId)}members`
  }

  #clientKey (clientId: string): string {
    return `${this.prefix}{clients}:${clientId}`
  }

  #clientIndex (): string {
    return `${this.prefix}{clients}:index`
  }

  /** An origin's set of clients is this plus the origin (the script derives it: same slot). */
  #originPrefix (): string {
    return `${this.prefix}{clients}:origin:`
  }

  #originsOfKey (clientId: string): string {
    return `${this.prefix}{clients}:origins:${clientId}`
  }

  #userKey (username: string): string {
    return `${this.prefix}user:${username}`
  }

  #grantsKey (clientId: string): string {
    return `${this.prefix}{c:${clientId}}:grants`
  }

  #sessionKey (userId: string, sessionHash: string): string {
    return `${this.prefix}{u:${userId}}:session:${sessionHash}`
  }

  #sessionsKey (userId: string): string {
    return `${this.prefix}{u:${userId}}:sessions`
  }

  /** The user's consents by client (in the slot of their consent sets). */
  #consentsKey (userId: string): string {
    return `${this.prefix}consents:{${userId}}`
  }

  #userGrantsKey (userId: string): string {
    return `${this.prefix}{u:${userId}}:grants`
  }

  #consentKey (userId: string, clientId: string): string {
    return `${this.prefix}consent:{${userId}}:${clientId}`
  }
}

/**
 * Every Redis call goes through here: whatever ioredis rejects with (connection closed, timeout,
 * a failover's MOVED storm) becomes the store-outage error, which every endpoint answers with 503.
 */
async function reach<T> (command: Promise<T>): Promise<T> {
  try {
    return await command
  } catch (error) {
    throw errors.storeUnavailable(undefined, { cause: error })
  }
}

/** The options a cluster's node connections take: ours, less what the cluster client manages itself. */
function nodeOptions ({ enableOfflineQueue: _queue, retryStrategy: _retry, lazyConnect: _lazy, enableAutoPipelining: _pipelining, ...options }: RedisOptions): RedisOptions {
  return options
}

/** `host:port` (or `[v6]:port`) as a node's address. */
function parseNode (node: string): { host: string, port: number } {
  const at = node.lastIndexOf(':')
  const host = node.slice(0, at).replace(/^\[(.*)\]$/, '$1')
  const port = Number(node.slice(at + 1))
  if (at < 1 || !Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`a cluster node is host:port, not ${JSON.stringify(node)}`)
  return { host, port }
}

/** The client's member in an origin's set: whether it is public, then its id. */
function originMember (client: ClientRecord): string {
  return `${client.public === true ? 'p' : 'c'}:${client.id}`
}

function parse<T> (value: string | null): T | undefined {
  return value === null ? undefined : JSON.parse(value) as T
}
