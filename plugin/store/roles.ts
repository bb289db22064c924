/**
 * The store's roles, the way Hydra composes its persister: each consumer takes only the roles it
 * uses (the MAC verifier: a token lookup and the nonce log's useNonce), so that it can be
 * tested against a fake of those few methods, and a third store (an adapter someone writes) knows
 * what each part must do. `Store` is all of them: what the plugin's options and the gateway pass.
 *
 * A store that cannot be reached rejects with `errors.storeUnavailable` (503, 96000), whatever the
 * method: callers never see a client library's own errors.
 */

import type {
  AccessTokenRecord, ClientChanges, ClientRecord, CodeRecord, Consent, CountedUse, DeviceCodeRecord, DeviceDecisionResult, DevicePoll, DeviceRedeemResult, HitCount, NonceStats, OriginClient, QuotaCount,
  RedeemResult, RefreshTokenRecord, RegistrationTokenRecord, RevocationListener, RotateResult, RotationGrace, SessionRecord, TokenRecords, UserCodeTarget, UserGrant, UserRecord
} from './records.ts'
import type { NonceUse } from './nonce-key.ts'

/** The store itself: what it is, whether it answers, the shared secret, its end. */
export interface StoreLifecycle {
  /** `memory` and `redis` are macgate's own stores; an adapter names itself. */
  readonly kind: string
  /** The server secret shared by every instance using this store: read, or created once. */
  serverSecret (proposed: string): Promise<string>
  /** Resolves when the store answers (a PING to Redis), else rejects with `errors.storeUnavailable`: readiness. */
  ping (): Promise<void>
  /**
   * Reports every command sent, for latency metrics (a store that sends none need not have it). A
   * store that batches nonces reports a batch with its size. When `waiter` is given, a command sent
   * for several requests (a nonce batch, a turn's token reads) comes with what `waiter` answered
   * (other than undefined) for each of them as it joined, in the caller's async context (a trace's
   * span of the request waiting); undefined when it answered nothing.
   */
  observeCommands? (observer: (command: string, seconds: number, failed: boolean, batchSize?: number, waiters?: unknown[]) => void, waiter?: () => unknown): void
  close (): Promise<void>
}

/** A client by its id: what the verifier's quotas read (a client's own limit). */
export interface ClientReader {
  getClient (clientId: string): Promise<ClientRecord | undefined>
}

/** The registered clients and the index of their browser origins. */
export interface ClientStore extends ClientReader {
  saveClient (client: ClientRecord): Promise<void>
  listClients (): Promise<ClientRecord[]>
  /**
   * Replaces the client's secret hash, atomically: the current one becomes the previous one,
   * accepted until `previousUntil`. The updated client, or undefined when there is no such client.
   */
  rotateClientSecret (clientId: string, secretHash: string, previousUntil: number): Promise<ClientRecord | undefined>
  /**
   * Replaces the fields of `changes` (the secret is left as it is, even by a rotation racing this)
   * and re-indexes the client's origins. The updated client, or undefined when there is none.
   */
  updateClient (clientId: string, changes: ClientChanges): Promise<ClientRecord | undefined>
  /** Removes the client and revokes every grant issued to it. False when it did not exist. */
  removeClient (clientId: string): Promise<boolean>
  /** The clients whose origins (`clientOrigins`) include `origin`: the index saving a client keeps. */
  clientsOfOrigin (origin: string): Promise<OriginClient[]>
}

/** Users and their signed-in browser sessions. */
export interface AccountStore {
  /** False when the username is taken. */
  createUser (user: UserRecord): Promise<boolean>
  getUserByName (username: string): Promise<UserRecord | undefined>
  /** Replaces an existing user's record (a new password); false when there is no such user. */
  updateUser (user: UserRecord): Promise<boolean>
  /** Deletes the user and ends every session of theirs; resolves to the record that was removed. */
  removeUser (username: string): Promise<UserRecord | undefined>

  saveSession (sessionHash: string, session: SessionRecord): Promise<void>
  getSession (sessionHash: string, userId: string): Promise<SessionRecord | undefined>
  /** Ends one session of the user, or (without a hash) all of them. */
  endSessions (userId: string, sessionHash?: string): Promise<void>
}

/** What each user has allowed each client. */
export interface ConsentStore {
  /** The scopes a user has already granted a client. */
  getConsent (userId: string, clientId: string): Promise<string[]>
  /** Adds scopes to the user's consent for the client and records when, atomically. */
  addConsent (userId: string, clientId: string, scopes: string[]): Promise<void>
  /** Every client the user has consented to, with the scopes and when. */
  listConsents (userId: string): Promise<Consent[]>
  /** Forgets the user's consent for the client: the next authorization asks again. */
  forgetConsent (userId: string, clientId: string): Promise<void>
  /** How many users have consented to the client (one counter read; consents given before this count existed are not in it). */
  countConsents (clientId: string): Promise<number>
}

/** Which grants each client and each user holds, so that removing one can revoke them. */
export interface GrantIndex {
  /**
   * Remembers a grant of a client and its user until `until` (Unix ms; a later call may only extend
   * it), so that removing the client, or the user removing the app, can revoke it. Grants whose
   * time has passed are forgotten: the client's list holds only grants that may still have live records.
   */
  trackGrant (clientId: string, grantId: string, until: number, userId: string): Promise<void>
  /** The user's grants that may still have live records (the user's own index, kept as the client's is). */
  listUserGrants (userId: string): Promise<UserGrant[]>
  /** Drops a grant from the user's index (once it is revoked). */
  forgetUserGrant (userId: string, clientId: string, grantId: string): Promise<void>
}

/** Authorization codes. Every record expires in the store at its `expiresAt`; no method takes a lifetime of its own. */
export interface CodeStore {
  saveCode (codeHash: string, code: CodeRecord): Promise<void>
  getCode (codeHash: string, grantId: string): Promise<CodeRecord | undefined>
  /**
   * Atomically: if the code is unused, marks it used and saves the tokens; if it was used
   * already, revokes every token of its grant.
   */
  redeemCode (codeHash: string, tokens: TokenRecords): Promise<RedeemResult>
}

/**
 * Device authorizations (RFC 8628): the device code by its hash, in its grant's slot, and the user
 * code's hash leading to it. Every read-modify-write is atomic, so that every instance judges a
 * poll alike and a decision or a redemption happens once. Uses the store's clock.
 */
export interface DeviceCodeStore {
  /**
   * Saves a new device authorization, the user code leading to it until `expiresAt`; the record is
   * kept as long again after that, so that a late poll learns it expired. False (nothing saved)
   * when the user code leads to another live one already.
   */
  saveDeviceCode (deviceCodeHash: string, userCodeHash: string, record: DeviceCodeRecord): Promise<boolean>
  /** The device code a user code leads to, until it expires or is decided. */
  findUserCode (userCodeHash: string): Promise<UserCodeTarget | undefined>
  getDeviceCode (deviceCodeHash: string, grantId: string): Promise<DeviceCodeRecord | undefined>
  /**
   * Atomically: records the user's decision on a pending, unexpired code; then the user code leads
   * nowhere any more.
   */
  decideDeviceCode (target: UserCodeTarget, userCodeHash: string, decision: { userId: string, approved: boolean }): Promise<DeviceDecisionResult>
  /**
   * Atomically: one poll by `clientId` now. Polled within `interval` less `toleranceMs` of the last
   * poll: `slow_down`, and the interval grows by 5 s. Every poll of a live code is remembered as the last.
   * Another client's code is left untouched (`other_client`).
   */
  pollDeviceCode (deviceCodeHash: string, grantId: string, clientId: string, toleranceMs: number): Promise<DevicePoll>
  /** Atomically: if approved and not yet spent, marks it spent and saves the tokens. */
  redeemDeviceCode (deviceCodeHash: string, tokens: TokenRecords): Promise<DeviceRedeemResult>
}

/** An access token by its hash, and the revocations that must drop it from any cache: the verifier's. */
export interface TokenLookup {
  /**
   * Any thenable: the Redis store's is a `Pending`, so that a token cache miss, on every request
   * that presents a token not held, makes no promise beyond the client's own.
   */
  getAccessToken (tokenHash: string, grantId: string): PromiseLike<AccessTokenRecord | undefined>
  /**
   * Calls the listener with the hashes of revoked access tokens, whichever instance revoked them.
   * Resolves once revocations are being received.
   */
  onRevocation (listener: RevocationListener): Promise<void>
}

/** Tokens and their revocation, grant by grant. */
export interface TokenStore extends TokenLookup {
  /** Saves tokens of an implicit grant (no code, no refresh token). */
  saveTokens (tokens: TokenRecords): Promise<void>
  getRefreshToken (tokenHash: string, grantId: string): Promise<RefreshTokenRecord | undefined>
  /**
   * Atomically: if the refresh token is unspent, marks it spent, revokes the access token issued
   * beside it and saves the new tokens (with `grace`, keeps its successor for `graceMs`); if it was
   * spent already: within that grace the kept successor, else the whole grant revoked.
   */
  rotateRefreshToken (tokenHash: string, tokens: TokenRecords, grace?: RotationGrace): Promise<RotateResult>
  /** Revokes every code and token of a grant; resolves to the revoked access token hashes. */
  revokeGrant (grantId: string): Promise<string[]>
}

/** The replay memory and the quota counters kept with it: written on every verified request. */
export interface NonceLog {
  /**
   * True the first time a nonce's key is seen in its minute's bucket, kept `ttlSeconds` (until the
   * minute leaves the window). A store that can answer at once (the embedded one) may return the
   * answer itself, and one that cannot any thenable (the Redis store's is a `Pending`, no promise):
   * this runs on every request.
   */
  useNonce (use: NonceUse): boolean | PromiseLike<boolean>
  /**
   * `useNonce` behind a quota counter, atomically: when the counter has reached its limit the
   * answer is `over` and the nonce is not recorded (it may be sent again); else the nonce is
   * recorded and, when it is fresh, counted. The Redis store does it in the nonce batch's script.
   */
  useCountedNonce (use: NonceUse, count: QuotaCount): CountedUse | PromiseLike<CountedUse>
}

/** Readings of the nonce log, for operators. */
export interface NonceReports {
  /** The counts of the named counters in a window (0 for none): for `clients show`. */
  quotaUsed (names: string[], window: number): Promise<number[]>
  /** How many nonces are held, and about how many bytes they take: for the metrics. */
  nonceStats (): Promise<NonceStats>
}

/** Rate-limit counters shared by every instance (@fastify/rate-limit's, through `rate-limit.ts`). */
export interface HitCounters {
  /**
   * Counts one hit on a rate-limit counter shared by every instance; the first hit opens a window
   * of `windowMs`, and the counter is gone when it ends.
   */
  countHit (key: string, windowMs: number): Promise<HitCount>
  /** A counter as it stands, without a hit; zero hits when there is none. */
  readHits (key: string): Promise<HitCount>
}

/** Initial access tokens for dynamic client registration (RFC 7591 §3), shared by every instance. */
export interface RegistrationTokens {
  /** Saves a new token; it expires in the store at its `expiresAt`. */
  saveRegistrationToken (token: RegistrationTokenRecord): Promise<void>
  /** The tokens still usable (not expired, not used up, not revoked), in no particular order. */
  listRegistrationTokens (): Promise<RegistrationTokenRecord[]>
  /** Deletes the token with this id; false when there was none live. */
  revokeRegistrationToken (id: string): Promise<boolean>
  /**
   * Atomically: when the token with this hash is live at `now` and has a use left, takes one (the
   * last one deletes it) and resolves to its id; else undefined.
   */
  useRegistrationToken (hash: string, now: number): Promise<string | undefined>
}

/** Every role: the store the plugin takes, and the gateway passes around. */
export interface Store extends StoreLifecycle, ClientStore, AccountStore, ConsentStore, GrantIndex, CodeStore, DeviceCodeStore, TokenStore, NonceLog, NonceReports, HitCounters, RegistrationTokens {}
