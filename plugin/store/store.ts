/**
 * The storage interface behind macgate. Two implementations keep the same semantics:
 * `MemoryStore` (embedded, one process) and `RedisStore` (shared by every gateway instance).
 *
 * Secrets never reach the store in clear: codes, access and refresh tokens are addressed by
 * the SHA-256 of their value, client secrets and passwords are stored as hashes, and a token's
 * mac_key is stored encrypted under a key derived from the token itself.
 *
 * Every token and code belongs to a grant: the family of everything issued from one user's
 * authorization. The grant id is part of each code and token value, so that all records of one
 * family live in one Redis Cluster hash slot and can be revoked by one atomic script.
 */

import type { NonceUse } from './nonce-key.js'

export type { NonceUse } from './nonce-key.js'

// A store that cannot be reached rejects with `errors.storeUnavailable` (503, 96000), whatever the
// method: callers never see a client library's own errors.

export interface ClientRecord {
  id: string
  name: string
  /** Empty for a public client, which has no secret (no hash matches it). */
  secretHash: string
  redirectUris: string[]
  scopes: string[]
  responseTypes: Array<'code' | 'token'>
  requirePkce: boolean
  /** The secret before the last rotation, accepted until `previousSecretUntil` (ms since the epoch). */
  previousSecretHash?: string
  previousSecretUntil?: number
  /** Absent: HmacSha1, the spec's only algorithm; HmacSha256 only for a client registered with it. */
  macAlgorithm?: 'HmacSha256'
  /** A resource server may introspect any client's tokens (RFC 7662); others only their own. */
  resourceServer?: boolean
  accessTokenTtl?: number
  refreshTokenTtl?: number
  /** A public client (RFC 6749 §2.1): no secret, PKCE required, redeems its code from a browser. */
  public?: true
  /** Origins besides its redirect URIs' that may call from a browser (CORS); never empty when present. */
  allowedOrigins?: string[]
  /** Its own limit of verified requests per minute on every route with a quota (README, "Quotas"); 0 blocks. */
  quotaPerMinute?: number
  createdAt: number
}

/**
 * What `Store.updateClient` replaces; `allowedOrigins: []` removes them, `quotaPerMinute: null` the
 * client's own limit (the routes' defaults apply again). More fields may join.
 */
export type ClientChanges = Partial<Pick<ClientRecord, 'redirectUris' | 'allowedOrigins' | 'responseTypes'>> & { quotaPerMinute?: number | null }

/** A client that registered an origin (by a redirect URI or an allowed origin). */
export interface OriginClient {
  clientId: string
  public: boolean
}

export interface UserRecord {
  id: string
  username: string
  passwordHash: string
  createdAt: number
}

/** A signed-in browser session; the cookie carries its id, the store only the id's hash. */
export interface SessionRecord {
  userId: string
  username: string
  /** Unix milliseconds. */
  expiresAt: number
}

export interface CodeRecord {
  grantId: string
  clientId: string
  userId: string
  /** The registered redirect URI the code was issued for. */
  redirectUri: string
  scope: string[]
  codeChallenge?: string
  /** Unix milliseconds. */
  expiresAt: number
  /** Set once the code has been exchanged. */
  used?: boolean
}

export interface AccessTokenRecord {
  grantId: string
  clientId: string
  userId: string
  openId: string
  scope: string[]
  /** The client's algorithm when it is not HmacSha1. */
  macAlgorithm?: 'HmacSha256'
  /** mac_key, AES-256-GCM encrypted under a key derived from the token (see core/credentials.ts). */
  macKeySealed: string
  /** Unix milliseconds. */
  expiresAt: number
}

export interface RefreshTokenRecord {
  grantId: string
  clientId: string
  userId: string
  redirectUri: string
  scope: string[]
  macAlgorithm?: 'HmacSha256'
  /** Hash of the access token issued beside it, revoked when this refresh token is spent. */
  accessTokenHash: string
  expiresAt: number
  /** Set once the refresh token has been exchanged. */
  spent?: boolean
}

/** The records of an access token (and maybe a refresh token) to save together, all of one grant. */
export interface TokenRecords {
  grantId: string
  access: { hash: string, record: AccessTokenRecord }
  refresh?: { hash: string, record: RefreshTokenRecord }
}

/** `ok`: done. `missing`: unknown or expired. `replayed`: already used, the grant is now revoked. */
export type RedeemResult = 'ok' | 'missing' | 'replayed'

/** A rotation may also find the token spent within its grace: then the successor kept for it. */
export type RotateResult = RedeemResult | { successor: string }

/** Within `graceMs` of a rotation, the spent refresh token answers with `successor` (sealed). */
export interface RotationGrace {
  graceMs: number
  successor: string
}

/** A rate-limit counter after one more hit: hits in the window so far, and ms until it resets. */
export interface HitCount {
  count: number
  resetMs: number
}

/** A grant of a user's, as their index keeps it: to which client, and until when it may have live records. */
export interface UserGrant {
  clientId: string
  grantId: string
  /** Unix milliseconds. */
  until: number
}

/** What a user has allowed a client: the scopes, and when they last allowed it. */
export interface Consent {
  clientId: string
  scopes: string[]
  /** Unix milliseconds. */
  grantedAt: number
}

/** Hashes of revoked access tokens; `null` when revocations may have been missed (reconnect). */
export interface RevocationListener {
  (accessTokenHashes: string[] | null): void
}

/** One quota counter to check and count with a nonce: a (client, route) in one fixed window. */
export interface QuotaCount {
  /** The counter's name (client and route), the same on every instance. */
  name: string
  /** The window's number: Unix seconds divided by its length. */
  window: number
  limit: number
  /** How long the window's counter must be kept, in seconds. */
  ttlSeconds: number
}

/** A counted nonce's answer and the counter's value after it. */
export interface CountedUse {
  outcome: 'fresh' | 'replayed' | 'over'
  used: number
}

/** The replay memory's size: nonces held, and an estimate of the memory they take (bytes). */
export interface NonceStats {
  held: number
  bytes: number
}

export interface Store {
  readonly kind: 'memory' | 'redis'

  saveClient (client: ClientRecord): Promise<void>
  getClient (clientId: string): Promise<ClientRecord | undefined>
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

  /** The scopes a user has already granted a client. */
  getConsent (userId: string, clientId: string): Promise<string[]>
  /** Adds scopes to the user's consent for the client and records when, atomically. */
  addConsent (userId: string, clientId: string, scopes: string[]): Promise<void>
  /** Every client the user has consented to, with the scopes and when. */
  listConsents (userId: string): Promise<Consent[]>
  /** Forgets the user's consent for the client: the next authorization asks again. */
  forgetConsent (userId: string, clientId: string): Promise<void>

  /**
   * Remembers a grant of a client and its user until `until` (Unix ms; a later call may only extend
   * it), so that removing the client, or the user removing the app, can revoke it. Grants whose time has passed are forgotten: the client's
   * list holds only grants that may still have live records.
   */
  trackGrant (clientId: string, grantId: string, until: number, userId: string): Promise<void>
  /** The user's grants that may still have live records (the user's own index, kept as the client's is). */
  listUserGrants (userId: string): Promise<UserGrant[]>
  /** Drops a grant from the user's index (once it is revoked). */
  forgetUserGrant (userId: string, clientId: string, grantId: string): Promise<void>

  // Every record expires in the store at its `expiresAt`; no method takes a lifetime of its own.
  saveCode (codeHash: string, code: CodeRecord): Promise<void>
  getCode (codeHash: string, grantId: string): Promise<CodeRecord | undefined>
  /**
   * Atomically: if the code is unused, marks it used and saves the tokens; if it was used
   * already, revokes every token of its grant.
   */
  redeemCode (codeHash: string, tokens: TokenRecords): Promise<RedeemResult>

  /** Saves tokens of an implicit grant (no code, no refresh token). */
  saveTokens (tokens: TokenRecords): Promise<void>
  getAccessToken (tokenHash: string, grantId: string): Promise<AccessTokenRecord | undefined>

  getRefreshToken (tokenHash: string, grantId: string): Promise<RefreshTokenRecord | undefined>
  /**
   * Atomically: if the refresh token is unspent, marks it spent, revokes the access token issued
   * beside it and saves the new tokens (with `grace`, keeps its successor for `graceMs`); if it was
   * spent already: within that grace the kept successor, else the whole grant revoked.
   */
  rotateRefreshToken (tokenHash: string, tokens: TokenRecords, grace?: RotationGrace): Promise<RotateResult>

  /** Revokes every code and token of a grant; resolves to the revoked access token hashes. */
  revokeGrant (grantId: string): Promise<string[]>

  /**
   * Calls the listener with the hashes of revoked access tokens, whichever instance revoked them.
   * Resolves once revocations are being received.
   */
  onRevocation (listener: RevocationListener): Promise<void>

  /**
   * True the first time a nonce's key is seen in its minute's bucket, kept `ttlSeconds` (until the
   * minute leaves the window). A store that can answer at once (the embedded one) may return the
   * answer itself: this runs on every request.
   */
  useNonce (use: NonceUse): boolean | Promise<boolean>
  /**
   * `useNonce` behind a quota counter, atomically: when the counter has reached its limit the
   * answer is `over` and the nonce is not recorded (it may be sent again); else the nonce is
   * recorded and, when it is fresh, counted. The Redis store does it in the nonce batch's script.
   */
  useCountedNonce (use: NonceUse, count: QuotaCount): CountedUse | Promise<CountedUse>
  /** The counts of the named counters in a window (0 for none): for `clients show`. */
  quotaUsed (names: string[], window: number): Promise<number[]>
  /** How many nonces are held, and about how many bytes they take: for the metrics. */
  nonceStats (): Promise<NonceStats>

  /**
   * Counts one hit on a rate-limit counter shared by every instance; the first hit opens a window
   * of `windowMs`, and the counter is gone when it ends.
   */
  countHit (key: string, windowMs: number): Promise<HitCount>
  /** A counter as it stands, without a hit; zero hits when there is none. */
  readHits (key: string): Promise<HitCount>

  /** The server secret shared by every instance using this store: read, or created once. */
  serverSecret (proposed: string): Promise<string>

  /** Resolves when the store answers (a PING to Redis), else rejects with `errors.storeUnavailable`: readiness. */
  ping (): Promise<void>

  /** Reports every command sent, for latency metrics (a store that sends none need not have it). */
  observeCommands? (observer: (command: string, seconds: number, failed: boolean) => void): void

  close (): Promise<void>
}

/** Whole seconds from now until `expiresAt` (Unix ms), at least 1: a record's lifetime in a store. */
export function secondsUntil (expiresAt: number, now = Date.now()): number {
  return Math.max(1, Math.ceil((expiresAt - now) / 1000))
}

/** A client's record with `changes` applied (an empty `allowedOrigins`, a null quota removed): both stores' update. */
export function withChanges (client: ClientRecord, { quotaPerMinute, ...changes }: ClientChanges): ClientRecord {
  const updated: ClientRecord = { ...client, ...changes }
  if (quotaPerMinute === null) delete updated.quotaPerMinute
  else if (quotaPerMinute !== undefined) updated.quotaPerMinute = quotaPerMinute
  if (updated.allowedOrigins?.length === 0) delete updated.allowedOrigins
  return updated
}

/** A grant in a user's index, as both stores write it: `clientId:grantId` (neither holds a colon). */
export function userGrantMember (clientId: string, grantId: string): string {
  return `${clientId}:${grantId}`
}

/** The grant a user's index member names, with its time. */
export function userGrantOf (member: string, until: number): UserGrant {
  const [clientId = '', grantId = ''] = member.split(':')
  return { clientId, grantId, until }
}
