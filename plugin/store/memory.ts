import { EventEmitter } from 'node:events'
import { NonceSet } from './nonce-set.js'
import type {
  AccessTokenRecord, ClientRecord, CodeRecord, HitCount, RedeemResult, RefreshTokenRecord,
  RevocationListener, Store, TokenRecords, UserRecord
} from './store.js'

// Rate-limit counters kept at most; past it the oldest go first (a flood of addresses cannot grow it).
const MAX_COUNTERS = 100_000

/** A map whose entries expire on their own, like Redis keys with a TTL. */
class ExpiringMap<V> {
  readonly #entries = new Map<string, { value: V, expiresAt: number }>()

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
    this.#entries.set(key, { value, expiresAt })
  }

  get size (): number {
    return this.#entries.size
  }

  expiresAt (key: string): number | undefined {
    return this.#entries.get(key)?.expiresAt
  }

  dropOldest (): void {
    for (const key of this.#entries.keys()) {
      this.#entries.delete(key)
      return
    }
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
  readonly #users = new Map<string, UserRecord>()
  readonly #consents = new Map<string, Set<string>>()
  readonly #clientGrants = new Map<string, Set<string>>()
  readonly #grants = new Map<string, Grant>()
  readonly #codes = new ExpiringMap<CodeRecord>()
  readonly #accessTokens = new ExpiringMap<AccessTokenRecord>()
  readonly #refreshTokens = new ExpiringMap<RefreshTokenRecord>()
  readonly #nonces = new NonceSet()
  readonly #counters = new ExpiringMap<{ count: number }>()
  readonly #revocations = new EventEmitter()
  #secret: string | undefined
  readonly #sweeper: NodeJS.Timeout

  constructor ({ sweepIntervalMs = 60_000 } = {}) {
    this.#sweeper = setInterval(() => this.#sweep(), sweepIntervalMs).unref()
  }

  async saveClient (client: ClientRecord): Promise<void> {
    this.#clients.set(client.id, structuredClone(client))
  }

  async getClient (clientId: string): Promise<ClientRecord | undefined> {
    const client = this.#clients.get(clientId)
    return client && structuredClone(client)
  }

  async listClients (): Promise<ClientRecord[]> {
    return [...this.#clients.values()].map((client) => structuredClone(client))
  }

  async removeClient (clientId: string): Promise<boolean> {
    if (!this.#clients.delete(clientId)) return false
    for (const grantId of this.#clientGrants.get(clientId) ?? []) await this.revokeGrant(grantId)
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

  async getConsent (userId: string, clientId: string): Promise<string[]> {
    return [...(this.#consents.get(`${userId}:${clientId}`) ?? [])]
  }

  async addConsent (userId: string, clientId: string, scopes: string[]): Promise<void> {
    const key = `${userId}:${clientId}`
    const granted = this.#consents.get(key) ?? new Set()
    for (const scope of scopes) granted.add(scope)
    this.#consents.set(key, granted)
  }

  async openGrant (clientId: string, grantId: string): Promise<void> {
    const grants = this.#clientGrants.get(clientId) ?? new Set()
    this.#clientGrants.set(clientId, grants.add(grantId))
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

  async rotateRefreshToken (tokenHash: string, tokens: TokenRecords): Promise<RedeemResult> {
    const refresh = this.#refreshTokens.get(tokenHash)
    if (refresh === undefined) return 'missing'
    if (refresh.spent === true) {
      this.#revoke(refresh.grantId)
      return 'replayed'
    }
    refresh.spent = true
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

  async useNonce (tokenHash: string, nonce: string, ttlSeconds: number): Promise<boolean> {
    return this.#nonces.add(`${tokenHash}:${nonce}`, ttlSeconds)
  }

  async countHit (key: string, windowMs: number): Promise<HitCount> {
    const now = Date.now()
    const counter = this.#counters.get(key)
    if (counter !== undefined) {
      counter.count++
      return { count: counter.count, resetMs: this.#counters.expiresAt(key)! - now }
    }
    if (this.#counters.size >= MAX_COUNTERS) this.#counters.dropOldest()
    this.#counters.set(key, { count: 1 }, now + windowMs)
    return { count: 1, resetMs: windowMs }
  }

  async serverSecret (proposed: string): Promise<string> {
    this.#secret ??= proposed
    return this.#secret
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
    this.#nonces.close()
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
    for (const hash of grant.refreshTokens) this.#refreshTokens.delete(hash)
    const revoked = [...grant.accessTokens].filter((hash) => this.#deleteLive(hash))
    if (revoked.length > 0) this.#revocations.emit('revoked', revoked)
    return revoked
  }

  /** Deletes an access token; true only when it was still live, as a Redis DEL would say. */
  #deleteLive (hash: string): boolean {
    return this.#accessTokens.get(hash) !== undefined && this.#accessTokens.delete(hash)
  }

  #sweep (): void {
    for (const map of [this.#codes, this.#accessTokens, this.#refreshTokens, this.#counters]) map.sweep()
    for (const [grantId, grant] of this.#grants) {
      const live = [...grant.codes].some((hash) => this.#codes.get(hash)) ||
        [...grant.accessTokens].some((hash) => this.#accessTokens.get(hash)) ||
        [...grant.refreshTokens].some((hash) => this.#refreshTokens.get(hash))
      if (!live) this.#grants.delete(grantId)
    }
  }
}
