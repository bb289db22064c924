import { EventEmitter } from 'node:events'
import { errors } from '../core/errors.js'
import { NonceBuckets } from './nonce-buckets.js'
import { clientOrigins } from '../core/origins.js'
import { userGrantMember, userGrantOf, withChanges } from './store.js'
import type { CountedUse, NonceStats, NonceUse, QuotaCount } from './store.js'
import type {
  AccessTokenRecord, ClientChanges, ClientRecord, CodeRecord, OriginClient, Consent, HitCount, RedeemResult, RefreshTokenRecord, RotateResult, RotationGrace,
  RevocationListener, SessionRecord, Store, TokenRecords, UserGrant, UserRecord
} from './store.js'

// Rate-limit counters and sessions kept at most; past it the oldest go first (a flood cannot grow them).
const MAX_COUNTERS = 100_000
/** Quota counters held at most: (client, route) pairs with requests in the current window; beyond it the oldest goes. */
const MAX_QUOTA_COUNTERS = 100_000
const MAX_SESSIONS = 100_000
/** Nonces held at most by default: 24,000 requests a second for 11 minutes (see the constructor). */
export const DEFAULT_MAX_NONCES = 16_000_000

/**
 * A map whose entries expire on their own, like Redis keys with a TTL; with a capacity, a new
 * entry past it pushes out the oldest, so that a flood of keys cannot grow it.
 */
class ExpiringMap<V> {
  readonly #entries = new Map<string, { value: V, expiresAt: number }>()
  readonly #capacity: number

  constructor (capacity = Number.POSITIVE_INFINITY) {
    this.#capacity = capacity
  }

  get (key: string): V | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= Date.now()) {
      this.#entries.delete(key)
      return undefined
    }
    return entry.value
  }

  set (key: string, value: V, expiresAt: number): void {
    if (this.#entries.size >= this.#capacity && !this.#entries.has(key)) this.#dropOldest()
    this.#entries.set(key, { value, expiresAt })
  }

  expiresAt (key: string): number | undefined {
    return this.#entries.get(key)?.expiresAt
  }

  * entries (): Generator<[string, V]> {
    for (const [key, entry] of this.#entries) yield [key, entry.value]
  }

  #dropOldest (): void {
    // Called only when the map is full, so there is a first (oldest) key.
    this.#entries.delete(this.#entries.keys().next().value!)
  }

  delete (key: string): boolean {
    return this.#entries.delete(key)
  }

  sweep (): void {
    const now = Date.now()
    for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key)
  }
}

interface Grant {
  codes: Set<string>
  accessTokens: Set<string>
  refreshTokens: Set<string>
}

/**
 * The embedded store: everything in this process, lost on exit. Each method runs to completion
 * without awaiting, which makes every read-modify-write atomic as the Redis scripts are.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory'
  readonly #clients = new Map<string, ClientRecord>()
  /** Per origin: the clients that registered it, each with whether it is public. */
  readonly #originClients = new Map<string, Map<string, boolean>>()
  readonly #users = new Map<string, UserRecord>()
  readonly #consents = new Map<string, Set<string>>()
  /** Per user: client id → when they last consented. */
  readonly #consentTimes = new Map<string, Map<string, number>>()
  /** Per user: `clientId:grantId` → until when the grant may have live records. */
  readonly #userGrants = new Map<string, Map<string, number>>()
  /** Per client: grant id → until when the grant may have live records. */
  readonly #clientGrants = new Map<string, Map<string, number>>()
  readonly #grants = new Map<string, Grant>()
  readonly #codes = new ExpiringMap<CodeRecord>()
  readonly #accessTokens = new ExpiringMap<AccessTokenRecord>()
  readonly #refreshTokens = new ExpiringMap<RefreshTokenRecord>()
  /** Sealed successors of refresh tokens spent within their rotation grace, by the spent token's hash. */
  readonly #successors = new ExpiringMap<string>()
  readonly #nonces: NonceBuckets
  readonly #counters = new ExpiringMap<{ count: number }>(MAX_COUNTERS)
  readonly #quotas = new ExpiringMap<{ count: number }>(MAX_QUOTA_COUNTERS)
  readonly #sessions = new ExpiringMap<SessionRecord>(MAX_SESSIONS)
  readonly #revocations = new EventEmitter()
  #secret: string | undefined
  readonly #sweeper: NodeJS.Timeout

  /**
   * `maxNonces`: the most nonces kept for replay detection, at most 21 bytes each (8 of a keyed
   * hash, in tables at least 3/8 full). The default, 16,000,000 (at most ~340 MB), holds 24,000
   * signed requests a second for the 11 minutes the longest-kept nonce is held, beyond what one core
   * verifies (README, "Capacity"); when that many are live, signed requests get 503.
   * `now`: the nonce buckets' clock (tests step it).
   */
  constructor ({ sweepIntervalMs = 60_000, maxNonces = DEFAULT_MAX_NONCES, now = Date.now }: { sweepIntervalMs?: number, maxNonces?: number, now?: () => number } = {}) {
    this.#nonces = new NonceBuckets({ capacity: maxNonces, now })
    this.#sweeper = setInterval(() => this.#sweep(), sweepIntervalMs).unref()
  }

  async saveClient (client: ClientRecord): Promise<void> {
    this.#indexOrigins(this.#clients.get(client.id), client)
    this.#clients.set(client.id, structuredClone(client))
  }

  async updateClient (clientId: string, changes: ClientChanges): Promise<ClientRecord | undefined> {
    const client = this.#clients.get(clientId)
    if (client === undefined) return undefined
    await this.saveClient(withChanges(client, structuredClone(changes)))
    return await this.getClient(clientId)
  }

  async clientsOfOrigin (origin: string): Promise<OriginClient[]> {
    return [...this.#originClients.get(origin) ?? []].map(([clientId, isPublic]) => ({ clientId, public: isPublic }))
  }

  /** Moves the client's entries in the origin index from its old record's origins to its new one's. */
  #indexOrigins (old: ClientRecord | undefined, updated: ClientRecord | undefined): void {
    for (const origin of old === undefined ? [] : clientOrigins(old)) {
      const clients = this.#originClients.get(origin)
      clients?.delete(old!.id)
      if (clients?.size === 0) this.#originClients.delete(origin)
    }
    for (const origin of updated === undefined ? [] : clientOrigins(updated)) {
      const clients = this.#originClients.get(origin) ?? new Map<string, boolean>()
      this.#originClients.set(origin, clients.set(updated!.id, updated!.public === true))
    }
  }

  async getClient (clientId: string): Promise<ClientRecord | undefined> {
    const client = this.#clients.get(clientId)
    return client && structuredClone(client)
  }

  async listClients (): Promise<ClientRecord[]> {
    return [...this.#clients.values()].map((client) => structuredClone(client))
  }

  async rotateClientSecret (clientId: string, secretHash: string, previousUntil: number): Promise<ClientRecord | undefined> {
    const client = this.#clients.get(clientId)
    if (client === undefined) return undefined
    Object.assign(client, { previousSecretHash: client.secretHash, previousSecretUntil: previousUntil, secretHash })
    return structuredClone(client)
  }

  async removeClient (clientId: string): Promise<boolean> {
    this.#indexOrigins(this.#clients.get(clientId), undefined)
    if (!this.#clients.delete(clientId)) return false
    for (const grantId of this.#clientGrants.get(clientId)?.keys() ?? []) await this.revokeGrant(grantId)
    this.#clientGrants.delete(clientId)
    return true
  }

  async createUser (user: UserRecord): Promise<boolean> {
    if (this.#users.has(user.username)) return false
    this.#users.set(user.username, structuredClone(user))
    return true
  }

  async getUserByName (username: string): Promise<UserRecord | undefined> {
    const user = this.#users.get(username)
    return user && structuredClone(user)
  }

  async updateUser (user: UserRecord): Promise<boolean> {
    if (!this.#users.has(user.username)) return false
    this.#users.set(user.username, structuredClone(user))
    return true
  }

  async removeUser (username: string): Promise<UserRecord | undefined> {
    const user = this.#users.get(username)
    if (user === undefined) return undefined
    this.#users.delete(username)
    await this.endSessions(user.id)
    return structuredClone(user)
  }

  async saveSession (sessionHash: string, session: SessionRecord): Promise<void> {
    this.#sessions.set(sessionHash, structuredClone(session), session.expiresAt)
  }

  async getSession (sessionHash: string, userId: string): Promise<SessionRecord | undefined> {
    const session = this.#sessions.get(sessionHash)
    return session?.userId === userId ? structuredClone(session) : undefined
  }

  async endSessions (userId: string, sessionHash?: string): Promise<void> {
    if (sessionHash !== undefined) {
      if (this.#sessions.get(sessionHash)?.userId === userId) this.#sessions.delete(sessionHash)
      return
    }
    for (const [hash, session] of this.#sessions.entries()) if (session.userId === userId) this.#sessions.delete(hash)
  }

  async getConsent (userId: string, clientId: string): Promise<string[]> {
    return [...(this.#consents.get(`${userId}:${clientId}`) ?? [])]
  }

  async addConsent (userId: string, clientId: string, scopes: string[]): Promise<void> {
    const key = `${userId}:${clientId}`
    const granted = this.#consents.get(key) ?? new Set()
    for (const scope of scopes) granted.add(scope)
    this.#consents.set(key, granted)
    if (scopes.length > 0) this.#consentTimes.set(userId, (this.#consentTimes.get(userId) ?? new Map<string, number>()).set(clientId, Date.now()))
  }

  async listConsents (userId: string): Promise<Consent[]> {
    const times = [...this.#consentTimes.get(userId) ?? []]
    return times.map(([clientId, grantedAt]) => ({ clientId, scopes: [...this.#consents.get(`${userId}:${clientId}`) ?? []].sort(), grantedAt }))
      .sort((a, b) => b.grantedAt - a.grantedAt)
  }

  async forgetConsent (userId: string, clientId: string): Promise<void> {
    this.#consents.delete(`${userId}:${clientId}`)
    const times = this.#consentTimes.get(userId)
    times?.delete(clientId)
    if (times?.size === 0) this.#consentTimes.delete(userId)
  }

  async trackGrant (clientId: string, grantId: string, until: number, userId: string): Promise<void> {
    extendUntil(this.#clientGrants, clientId, grantId, until)
    extendUntil(this.#userGrants, userId, userGrantMember(clientId, grantId), until)
  }

  async listUserGrants (userId: string): Promise<UserGrant[]> {
    const now = Date.now()
    return [...this.#userGrants.get(userId) ?? []].filter(([, until]) => until > now).map(([member, until]) => userGrantOf(member, until))
  }

  async forgetUserGrant (userId: string, clientId: string, grantId: string): Promise<void> {
    const grants = this.#userGrants.get(userId)
    grants?.delete(userGrantMember(clientId, grantId))
    if (grants?.size === 0) this.#userGrants.delete(userId)
  }

  async saveCode (codeHash: string, code: CodeRecord): Promise<void> {
    this.#codes.set(codeHash, structuredClone(code), code.expiresAt)
    this.#grant(code.grantId).codes.add(codeHash)
  }

  async getCode (codeHash: string): Promise<CodeRecord | undefined> {
    const code = this.#codes.get(codeHash)
    return code && structuredClone(code)
  }

  async redeemCode (codeHash: string, tokens: TokenRecords): Promise<RedeemResult> {
    const code = this.#codes.get(codeHash)
    if (code === undefined) return 'missing'
    if (code.used === true) {
      this.#revoke(code.grantId)
      return 'replayed'
    }
    code.used = true
    this.#save(tokens)
    return 'ok'
  }

  async saveTokens (tokens: TokenRecords): Promise<void> {
    this.#save(tokens)
  }

  async getAccessToken (tokenHash: string): Promise<AccessTokenRecord | undefined> {
    const token = this.#accessTokens.get(tokenHash)
    return token && structuredClone(token)
  }

  async getRefreshToken (tokenHash: string): Promise<RefreshTokenRecord | undefined> {
    const token = this.#refreshTokens.get(tokenHash)
    return token && structuredClone(token)
  }

  async rotateRefreshToken (tokenHash: string, tokens: TokenRecords, grace?: RotationGrace): Promise<RotateResult> {
    const refresh = this.#refreshTokens.get(tokenHash)
    if (refresh === undefined) return 'missing'
    if (refresh.spent === true) {
      const successor = this.#successors.get(tokenHash)
      if (successor !== undefined) return { successor }
      this.#revoke(refresh.grantId)
      return 'replayed'
    }
    refresh.spent = true
    if (grace !== undefined && grace.graceMs > 0) this.#successors.set(tokenHash, grace.successor, Date.now() + grace.graceMs)
    if (this.#deleteLive(refresh.accessTokenHash)) this.#revocations.emit('revoked', [refresh.accessTokenHash])
    this.#save(tokens)
    return 'ok'
  }

  async revokeGrant (grantId: string): Promise<string[]> {
    return this.#revoke(grantId)
  }

  async onRevocation (listener: RevocationListener): Promise<void> {
    this.#revocations.on('revoked', listener)
  }

  useNonce ({ key, minute, ttlSeconds }: NonceUse): boolean {
    if (!this.#nonces.hasRoom()) throw errors.storeUnavailable('nonce store is full; try again shortly')
    return this.#nonces.add(key, minute, ttlSeconds)
  }

  /** Counted in process: this instance's requests only (README, "Quotas"). */
  useCountedNonce (use: NonceUse, { name, window, limit, ttlSeconds }: QuotaCount): CountedUse {
    const key = `${window}:${name}`
    const counter = this.#quotas.get(key)
    const used = counter?.count ?? 0
    if (used >= limit) return { outcome: 'over', used }
    if (!this.useNonce(use)) return { outcome: 'replayed', used }
    if (counter === undefined) this.#quotas.set(key, { count: 1 }, Date.now() + ttlSeconds * 1000)
    else counter.count++
    return { outcome: 'fresh', used: used + 1 }
  }

  async quotaUsed (names: string[], window: number): Promise<number[]> {
    return names.map((name) => this.#quotas.get(`${window}:${name}`)?.count ?? 0)
  }

  async nonceStats (): Promise<NonceStats> {
    return { held: this.#nonces.size, bytes: this.#nonces.bytes }
  }

  async countHit (key: string, windowMs: number): Promise<HitCount> {
    const now = Date.now()
    const counter = this.#counters.get(key)
    if (counter !== undefined) {
      counter.count++
      return { count: counter.count, resetMs: this.#counters.expiresAt(key)! - now }
    }
    this.#counters.set(key, { count: 1 }, now + windowMs)
    return { count: 1, resetMs: windowMs }
  }

  async readHits (key: string): Promise<HitCount> {
    const count = this.#counters.get(key)?.count ?? 0
    return { count, resetMs: count === 0 ? 0 : this.#counters.expiresAt(key)! - Date.now() }
  }

  /** In this process: it answers whenever the process does. */
  async ping (): Promise<void> {}

  async serverSecret (proposed: string): Promise<string> {
    this.#secret ??= proposed
    return this.#secret
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }

  #grant (grantId: string): Grant {
    let grant = this.#grants.get(grantId)
    if (grant === undefined) {
      grant = { codes: new Set(), accessTokens: new Set(), refreshTokens: new Set() }
      this.#grants.set(grantId, grant)
    }
    return grant
  }

  #save (tokens: TokenRecords): void {
    const grant = this.#grant(tokens.grantId)
    this.#accessTokens.set(tokens.access.hash, structuredClone(tokens.access.record), tokens.access.record.expiresAt)
    grant.accessTokens.add(tokens.access.hash)
    if (tokens.refresh !== undefined) {
      this.#refreshTokens.set(tokens.refresh.hash, structuredClone(tokens.refresh.record), tokens.refresh.record.expiresAt)
      grant.refreshTokens.add(tokens.refresh.hash)
    }
  }

  #revoke (grantId: string): string[] {
    const grant = this.#grants.get(grantId)
    if (grant === undefined) return []
    this.#grants.delete(grantId)
    for (const hash of grant.codes) this.#codes.delete(hash)
    for (const hash of grant.refreshTokens) {
      this.#refreshTokens.delete(hash)
      this.#successors.delete(hash)
    }
    const revoked = [...grant.accessTokens].filter((hash) => this.#deleteLive(hash))
    if (revoked.length > 0) this.#revocations.emit('revoked', revoked)
    return revoked
  }

  /** Deletes an access token; true only when it was still live, as a Redis DEL would say. */
  #deleteLive (hash: string): boolean {
    return this.#accessTokens.get(hash) !== undefined && this.#accessTokens.delete(hash)
  }

  #sweep (): void {
    for (const map of [this.#codes, this.#accessTokens, this.#refreshTokens, this.#successors, this.#counters, this.#quotas, this.#sessions]) map.sweep()
    for (const [grantId, grant] of this.#grants) {
      const live = [...grant.codes].some((hash) => this.#codes.get(hash)) ||
        [...grant.accessTokens].some((hash) => this.#accessTokens.get(hash)) ||
        [...grant.refreshTokens].some((hash) => this.#refreshTokens.get(hash))
      if (!live) this.#grants.delete(grantId)
    }
    const now = Date.now()
    for (const index of [this.#clientGrants, this.#userGrants]) {
      for (const [owner, grants] of index) {
        for (const [grantId, until] of grants) if (until <= now) grants.delete(grantId)
        if (grants.size === 0) index.delete(owner)
      }
    }
  }
}

/** Sets a grant's time in an owner's index; a later call may only extend it. */
function extendUntil (index: Map<string, Map<string, number>>, owner: string, member: string, until: number): void {
  const grants = index.get(owner) ?? new Map<string, number>()
  index.set(owner, grants.set(member, Math.max(until, grants.get(member) ?? 0)))
}
