import { MemoryAccounts } from './accounts.js'
import { MemoryClients } from './clients.js'
import { MemoryConsents } from './consents.js'
import { MemoryGrantIndex } from './grant-index.js'
import { MemoryGrants } from './grants.js'
import { MemoryHitCounters } from './hit-counters.js'
import { MemoryNonces } from './nonces.js'
import type { NonceUse } from '../nonce-key.js'
import type {
  AccessTokenRecord, ClientChanges, ClientRecord, CodeRecord, Consent, CountedUse, HitCount, NonceStats, OriginClient, QuotaCount, RedeemResult,
  RefreshTokenRecord, RevocationListener, RotateResult, RotationGrace, SessionRecord, TokenRecords, UserGrant, UserRecord
} from '../records.js'
import type { Store } from '../roles.js'

/** Nonces held at most by default: 24,000 requests a second for 11 minutes (see the constructor). */
export const DEFAULT_MAX_NONCES = 16_000_000

export interface MemoryStoreOptions {
  /** How often expired records are dropped, in ms. */
  sweepIntervalMs?: number
  /**
   * The most nonces kept for replay detection, at most 21 bytes each (8 of a keyed hash, in tables
   * at least 3/8 full). The default, 16,000,000 (at most ~340 MB), holds 24,000 signed requests a
   * second for the 11 minutes the longest-kept nonce is held, beyond what one core verifies
   * (README, "Capacity"); when that many are live, signed requests get 503.
   */
  maxNonces?: number
  /** The store's only clock, in Unix ms: every expiry and time it records (tests step it). */
  clock?: () => number
}

/**
 * The embedded store: everything in this process, lost on exit, one part per role (this folder).
 * Each method runs to completion without awaiting (removing a client revokes its grants, and
 * removing a user ends their sessions, within the same step), which makes every read-modify-write
 * atomic as the Redis scripts are.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory'
  readonly #clients: MemoryClients
  readonly #accounts: MemoryAccounts
  readonly #consents: MemoryConsents
  readonly #grantIndex: MemoryGrantIndex
  readonly #grants: MemoryGrants
  readonly #nonces: MemoryNonces
  readonly #hits: MemoryHitCounters
  #secret: string | undefined
  readonly #sweeper: NodeJS.Timeout

  constructor ({ sweepIntervalMs = 60_000, maxNonces = DEFAULT_MAX_NONCES, clock = Date.now }: MemoryStoreOptions = {}) {
    this.#grantIndex = new MemoryGrantIndex(clock)
    this.#grants = new MemoryGrants(clock)
    this.#clients = new MemoryClients(this.#grantIndex, this.#grants)
    this.#accounts = new MemoryAccounts(clock)
    this.#consents = new MemoryConsents(clock)
    this.#nonces = new MemoryNonces(clock, maxNonces)
    this.#hits = new MemoryHitCounters(clock)
    this.#sweeper = setInterval(() => this.#sweep(), sweepIntervalMs).unref()
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

  // Codes and tokens (grants.ts)
  saveCode (codeHash: string, code: CodeRecord): Promise<void> { return this.#grants.saveCode(codeHash, code) }
  getCode (codeHash: string): Promise<CodeRecord | undefined> { return this.#grants.getCode(codeHash) }
  redeemCode (codeHash: string, tokens: TokenRecords): Promise<RedeemResult> { return this.#grants.redeemCode(codeHash, tokens) }
  saveTokens (tokens: TokenRecords): Promise<void> { return this.#grants.saveTokens(tokens) }
  getAccessToken (tokenHash: string): Promise<AccessTokenRecord | undefined> { return this.#grants.getAccessToken(tokenHash) }
  getRefreshToken (tokenHash: string): Promise<RefreshTokenRecord | undefined> { return this.#grants.getRefreshToken(tokenHash) }
  rotateRefreshToken (tokenHash: string, tokens: TokenRecords, grace?: RotationGrace): Promise<RotateResult> { return this.#grants.rotateRefreshToken(tokenHash, tokens, grace) }
  revokeGrant (grantId: string): Promise<string[]> { return this.#grants.revokeGrant(grantId) }
  onRevocation (listener: RevocationListener): Promise<void> { return this.#grants.onRevocation(listener) }

  // Nonces and quota counters (nonces.ts): answered at once, no promise on the hot path.
  useNonce (use: NonceUse): boolean { return this.#nonces.useNonce(use) }
  useCountedNonce (use: NonceUse, count: QuotaCount): CountedUse { return this.#nonces.useCountedNonce(use, count) }
  quotaUsed (names: string[], window: number): Promise<number[]> { return this.#nonces.quotaUsed(names, window) }
  nonceStats (): Promise<NonceStats> { return this.#nonces.nonceStats() }

  // Rate-limit counters (hit-counters.ts)
  countHit (key: string, windowMs: number): Promise<HitCount> { return this.#hits.countHit(key, windowMs) }
  readHits (key: string): Promise<HitCount> { return this.#hits.readHits(key) }

  /** In this process: it answers whenever the process does. */
  async ping (): Promise<void> {}

  async serverSecret (proposed: string): Promise<string> {
    this.#secret ??= proposed
    return this.#secret
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }

  #sweep (): void {
    this.#grants.sweep()
    this.#hits.sweep()
    this.#nonces.sweep()
    this.#accounts.sweep()
    this.#grantIndex.sweep()
  }
}
