/**
 * The records the stores keep, and the helpers both stores share to keep them alike.
 *
 * Secrets never reach the store in clear: codes, access and refresh tokens are addressed by
 * the SHA-256 of their value, client secrets and passwords are stored as hashes, and a token's
 * mac_key is stored encrypted under a key derived from the token itself.
 *
 * Every token and code belongs to a grant: the family of everything issued from one user's
 * authorization. The grant id is part of each code and token value, so that all records of one
 * family live in one Redis Cluster hash slot and can be revoked by one atomic script.
 */

import { grantTypesOfResponseTypes, type GrantType, type ResponseType } from '../access/grant-types.ts'

export interface ClientRecord {
  id: string
  name: string
  /** Empty for a public client, which has no secret (no hash matches it). */
  secretHash: string
  redirectUris: string[]
  scopes: string[]
  /** What the authorization endpoint serves it: follows from `grantTypes` (access/grant-types.ts). */
  responseTypes: ResponseType[]
  /**
   * What the token endpoints serve it (RFC names). A record saved before clients had them reads
   * with the ones its response types allowed (`storedClient`).
   */
  grantTypes: GrantType[]
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
  /** Present when the client registered itself (RFC 7591) rather than an operator registering it. */
  selfRegistration?: SelfRegistration
  /** The user (by id) whose app it is: set by the developer console, or by an operator (the admin API). */
  ownerId?: string
  createdAt: number
}

/**
 * How a client registered itself (RFC 7591), kept on its record: it marks the client as
 * self-registered (shown unverified on the consent page), and holds the hash of the registration
 * access token that manages it (RFC 7592) and the metadata macgate has no field of its own for.
 */
export interface SelfRegistration {
  /** The door it came in by: the open endpoint, an initial access token (by the token's id), or the developer console. */
  via: 'open' | 'token' | 'console'
  initialTokenId?: string
  /** SHA-256 of the registration access token (compared in constant time); none for a console app, managed by its owner's session. */
  accessTokenHash?: string
  tokenEndpointAuthMethod: 'client_secret_basic' | 'client_secret_post' | 'none'
  clientUri?: string
  logoUri?: string
  contacts?: string[]
  softwareId?: string
  softwareVersion?: string
}

/**
 * What `Store.updateClient` replaces; `allowedOrigins: []` removes them, `quotaPerMinute: null` the
 * client's own limit (the routes' defaults apply again). More fields may join.
 */
export type ClientChanges = Partial<Pick<ClientRecord, 'redirectUris' | 'allowedOrigins' | 'responseTypes' | 'grantTypes' | 'name' | 'scopes' | 'selfRegistration'>> & { quotaPerMinute?: number | null, ownerId?: string | null }

/** A client record as read from a store: one saved before clients had grant types gets those its response types allowed. */
export function storedClient (client: ClientRecord): ClientRecord {
  if (Array.isArray(client.grantTypes)) return client
  return { ...client, grantTypes: grantTypesOfResponseTypes(client.responseTypes) }
}

/**
 * An initial access token (RFC 7591 §3): what lets a developer register a client when the
 * deployment asks for one. Addressed by the hash of its value; `id` names it to operators.
 */
export interface RegistrationTokenRecord {
  id: string
  hash: string
  /** Registrations it still allows. */
  usesLeft: number
  /** Registrations it allowed when made. */
  uses: number
  /** Unix milliseconds. */
  expiresAt: number
  createdAt: number
}

/** A client that registered an origin (by a redirect URI or an allowed origin). */
export interface OriginClient {
  clientId: string
  public: boolean
}

export interface UserRecord {
  id: string
  username: string
  passwordHash: string
  /** An operator allowed them the developer console (`developerConsole: "developers"`). */
  developer?: true
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

/**
 * A device authorization (RFC 8628) from its start until its token set is issued: what the device
 * asked for, how often it may poll, and the user's decision once made.
 */
export interface DeviceCodeRecord {
  grantId: string
  clientId: string
  scope: string[]
  /** Unix ms: after it the code can no longer be entered, and a poll is told it expired. */
  expiresAt: number
  /** Seconds the device must wait between polls; each slow_down adds 5 (RFC 8628 §3.5). */
  interval: number
  /** `spent` once its token set was issued. */
  status: 'pending' | 'approved' | 'denied' | 'spent'
  /** Who decided, once someone has. */
  userId?: string
  /** Unix ms of the last poll, so that every instance judges the next one alike. */
  lastPollAt?: number
}

/** What one poll finds: the status, or `slow_down` (the interval grown), `expired`, `missing`, `other_client`. */
export type DevicePollState = DeviceCodeRecord['status'] | 'slow_down' | 'expired' | 'missing' | 'other_client'

/** A poll's answer: its state, and the record as the poll left it (absent when `missing` or `other_client`). */
export interface DevicePoll {
  state: DevicePollState
  record?: DeviceCodeRecord
}

/** Where a user code leads: the device code's grant and hash. */
export interface UserCodeTarget {
  grantId: string
  deviceCodeHash: string
}

/** `ok`: recorded. `missing`: unknown or gone. `expired`: too late. `decided`: someone decided already. */
export type DeviceDecisionResult = 'ok' | 'missing' | 'expired' | 'decided'

/** `ok`: spent now, tokens saved. `spent`: already redeemed. `undecided`: not approved (yet). */
export type DeviceRedeemResult = 'ok' | 'missing' | 'spent' | 'undecided'

export interface AccessTokenRecord {
  grantId: string
  clientId: string
  userId: string
  openId: string
  scope: string[]
  /** The client's algorithm when it is not HmacSha1. */
  macAlgorithm?: 'HmacSha256'
  /** mac_key, AES-256-GCM encrypted under a key derived from the token (see access/credentials.ts). */
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

/** Whole seconds from now until `expiresAt` (Unix ms), at least 1: a record's lifetime in a store. */
export function secondsUntil (expiresAt: number, now: number): number {
  return Math.max(1, Math.ceil((expiresAt - now) / 1000))
}

/** A client's record with `changes` applied (an empty `allowedOrigins`, a null quota removed): both stores' update. */
export function withChanges (client: ClientRecord, { quotaPerMinute, ownerId, ...changes }: ClientChanges): ClientRecord {
  const updated: ClientRecord = { ...client, ...changes }
  if (ownerId === null) delete updated.ownerId
  else if (ownerId !== undefined) updated.ownerId = ownerId
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
