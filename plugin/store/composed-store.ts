import type { NonceUse } from './nonce-key.ts'
import type {
  AccessTokenRecord, ClientChanges, ClientRecord, CodeRecord, Consent, CountedUse, DeviceCodeRecord, DeviceDecisionResult, DevicePoll, DeviceRedeemResult, HitCount, NonceStats, OriginClient, QuotaCount, RedeemResult,
  RefreshTokenRecord, RegistrationTokenRecord, RevocationListener, RotateResult, RotationGrace, SessionRecord, TokenRecords, UserCodeTarget, UserGrant, UserRecord
} from './records.ts'
import type { AccountStore, ClientStore, CodeStore, ConsentStore, DeviceCodeStore, GrantIndex, HitCounters, NonceLog, NonceReports, RegistrationTokens, Store, StoreLifecycle, TokenStore } from './roles.ts'

/** A store's parts, one per role: what `ComposedStore` hands each method to. */
export interface StoreParts {
  clients: ClientStore
  accounts: AccountStore
  consents: ConsentStore
  grantIndex: GrantIndex
  grants: CodeStore & TokenStore
  devices: DeviceCodeStore
  nonces: NonceLog & NonceReports
  hits: HitCounters
  registrationTokens: RegistrationTokens
}

/**
 * A store made of one part per role: each role's methods are the part's, handed over as they are
 * (an answer the part gives at once stays at once). Both stores are one of these; what differs is
 * their parts and their lifecycle (`StoreLifecycle`, the subclass's own).
 */
export abstract class ComposedStore implements Omit<Store, keyof StoreLifecycle> {
  readonly #parts: StoreParts

  constructor (parts: StoreParts) {
    this.#parts = parts
  }

  saveClient (client: ClientRecord): Promise<void> { return this.#parts.clients.saveClient(client) }
  getClient (clientId: string): Promise<ClientRecord | undefined> { return this.#parts.clients.getClient(clientId) }
  listClients (): Promise<ClientRecord[]> { return this.#parts.clients.listClients() }
  rotateClientSecret (clientId: string, secretHash: string, previousUntil: number): Promise<ClientRecord | undefined> { return this.#parts.clients.rotateClientSecret(clientId, secretHash, previousUntil) }
  updateClient (clientId: string, changes: ClientChanges): Promise<ClientRecord | undefined> { return this.#parts.clients.updateClient(clientId, changes) }
  removeClient (clientId: string): Promise<boolean> { return this.#parts.clients.removeClient(clientId) }
  clientsOfOrigin (origin: string): Promise<OriginClient[]> { return this.#parts.clients.clientsOfOrigin(origin) }

  createUser (user: UserRecord): Promise<boolean> { return this.#parts.accounts.createUser(user) }
  getUserByName (username: string): Promise<UserRecord | undefined> { return this.#parts.accounts.getUserByName(username) }
  updateUser (user: UserRecord): Promise<boolean> { return this.#parts.accounts.updateUser(user) }
  removeUser (username: string): Promise<UserRecord | undefined> { return this.#parts.accounts.removeUser(username) }
  saveSession (sessionHash: string, session: SessionRecord): Promise<void> { return this.#parts.accounts.saveSession(sessionHash, session) }
  getSession (sessionHash: string, userId: string): Promise<SessionRecord | undefined> { return this.#parts.accounts.getSession(sessionHash, userId) }
  endSessions (userId: string, sessionHash?: string): Promise<void> { return this.#parts.accounts.endSessions(userId, sessionHash) }

  getConsent (userId: string, clientId: string): Promise<string[]> { return this.#parts.consents.getConsent(userId, clientId) }
  addConsent (userId: string, clientId: string, scopes: string[]): Promise<void> { return this.#parts.consents.addConsent(userId, clientId, scopes) }
  listConsents (userId: string): Promise<Consent[]> { return this.#parts.consents.listConsents(userId) }
  forgetConsent (userId: string, clientId: string): Promise<void> { return this.#parts.consents.forgetConsent(userId, clientId) }
  countConsents (clientId: string): Promise<number> { return this.#parts.consents.countConsents(clientId) }

  trackGrant (clientId: string, grantId: string, until: number, userId: string): Promise<void> { return this.#parts.grantIndex.trackGrant(clientId, grantId, until, userId) }
  listUserGrants (userId: string): Promise<UserGrant[]> { return this.#parts.grantIndex.listUserGrants(userId) }
  forgetUserGrant (userId: string, clientId: string, grantId: string): Promise<void> { return this.#parts.grantIndex.forgetUserGrant(userId, clientId, grantId) }

  saveCode (codeHash: string, code: CodeRecord): Promise<void> { return this.#parts.grants.saveCode(codeHash, code) }
  getCode (codeHash: string, grantId: string): Promise<CodeRecord | undefined> { return this.#parts.grants.getCode(codeHash, grantId) }
  redeemCode (codeHash: string, tokens: TokenRecords): Promise<RedeemResult> { return this.#parts.grants.redeemCode(codeHash, tokens) }
  saveTokens (tokens: TokenRecords): Promise<void> { return this.#parts.grants.saveTokens(tokens) }
  getAccessToken (tokenHash: string, grantId: string): PromiseLike<AccessTokenRecord | undefined> { return this.#parts.grants.getAccessToken(tokenHash, grantId) }
  getRefreshToken (tokenHash: string, grantId: string): Promise<RefreshTokenRecord | undefined> { return this.#parts.grants.getRefreshToken(tokenHash, grantId) }
  rotateRefreshToken (tokenHash: string, tokens: TokenRecords, grace?: RotationGrace): Promise<RotateResult> { return this.#parts.grants.rotateRefreshToken(tokenHash, tokens, grace) }
  revokeGrant (grantId: string): Promise<string[]> { return this.#parts.grants.revokeGrant(grantId) }
  onRevocation (listener: RevocationListener): Promise<void> { return this.#parts.grants.onRevocation(listener) }

  saveDeviceCode (deviceCodeHash: string, userCodeHash: string, record: DeviceCodeRecord): Promise<boolean> { return this.#parts.devices.saveDeviceCode(deviceCodeHash, userCodeHash, record) }
  findUserCode (userCodeHash: string): Promise<UserCodeTarget | undefined> { return this.#parts.devices.findUserCode(userCodeHash) }
  getDeviceCode (deviceCodeHash: string, grantId: string): Promise<DeviceCodeRecord | undefined> { return this.#parts.devices.getDeviceCode(deviceCodeHash, grantId) }
  decideDeviceCode (target: UserCodeTarget, userCodeHash: string, decision: { userId: string, approved: boolean }): Promise<DeviceDecisionResult> { return this.#parts.devices.decideDeviceCode(target, userCodeHash, decision) }
  pollDeviceCode (deviceCodeHash: string, grantId: string, clientId: string, toleranceMs: number): Promise<DevicePoll> { return this.#parts.devices.pollDeviceCode(deviceCodeHash, grantId, clientId, toleranceMs) }
  redeemDeviceCode (deviceCodeHash: string, tokens: TokenRecords): Promise<DeviceRedeemResult> { return this.#parts.devices.redeemDeviceCode(deviceCodeHash, tokens) }

  useNonce (use: NonceUse): boolean | PromiseLike<boolean> { return this.#parts.nonces.useNonce(use) }
  useCountedNonce (use: NonceUse, count: QuotaCount): CountedUse | PromiseLike<CountedUse> { return this.#parts.nonces.useCountedNonce(use, count) }
  quotaUsed (names: string[], window: number): Promise<number[]> { return this.#parts.nonces.quotaUsed(names, window) }
  nonceStats (): Promise<NonceStats> { return this.#parts.nonces.nonceStats() }

  countHit (key: string, windowMs: number): Promise<HitCount> { return this.#parts.hits.countHit(key, windowMs) }
  readHits (key: string): Promise<HitCount> { return this.#parts.hits.readHits(key) }

  saveRegistrationToken (token: RegistrationTokenRecord): Promise<void> { return this.#parts.registrationTokens.saveRegistrationToken(token) }
  listRegistrationTokens (): Promise<RegistrationTokenRecord[]> { return this.#parts.registrationTokens.listRegistrationTokens() }
  revokeRegistrationToken (id: string): Promise<boolean> { return this.#parts.registrationTokens.revokeRegistrationToken(id) }
  useRegistrationToken (hash: string, now: number): Promise<string | undefined> { return this.#parts.registrationTokens.useRegistrationToken(hash, now) }
}
