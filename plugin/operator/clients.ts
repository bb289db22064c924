import { randomUUID } from 'node:crypto'
import { hashPassword, type ScryptCost } from '../account/password.ts'
import { registrationProblem } from '../oauth/redirect-uri.ts'
import { parseScope, type ScopeRegistry } from '../access/scope.ts'
import { hashSecret, newClientId, randomBase64Url } from '../access/credentials.ts'
import type { AccountStore, ClientChanges, ClientReader, ClientRecord, ClientStore, ConsentStore, GrantIndex, SelfRegistration, TokenStore, UserGrant } from '../store/store.ts'
import { originProblem } from '../http/origins.ts'
import { revokeUserGrants } from '../account/authorized-apps.ts'
import { GRANT_TYPES, grantTypesOfResponseTypes, grantTypesWithResponseTypes, normalGrantTypes, responseTypesOf, type GrantType, type ResponseType } from '../access/grant-types.ts'
import type { AuditEvents } from '../observe/events.ts'

/** A registration the operator asked for that cannot be made; the message says which field. */
export class RegistrationError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'RegistrationError'
  }
}

/** The client, user or grant an operator named does not exist (the admin API's 404). */
export class NoSuchRecordError extends RegistrationError {
  constructor (message: string) {
    super(message)
    this.name = 'NoSuchRecordError'
  }
}

export interface NewClient {
  name: string
  redirectUris: string[]
  /** Space-separated; the client's allowed and default scopes. */
  scope?: string
  /** Default: code and token; a public client or one requiring PKCE, code only. With `grantTypes`, theirs. */
  responseTypes?: ResponseType[]
  /** RFC 7591 names; default: those of the response types. `authorization_code` brings `refresh_token`. */
  grantTypes?: string[]
  requirePkce?: boolean
  /** A public client (RFC 6749 §2.1): no secret, PKCE required; for apps in a browser or on a device. */
  public?: boolean
  /** Origins besides the redirect URIs' that may call the open API from a browser (CORS). */
  allowedOrigins?: string[]
  /** HmacSha1 (the default, the spec's only one) or HmacSha256 (opt-in). */
  macAlgorithm?: 'HmacSha1' | 'HmacSha256'
  /** May introspect every client's tokens at /oauth2/introspect. */
  resourceServer?: boolean
  accessTokenTtl?: number
  refreshTokenTtl?: number
  /** Its own limit per minute on every route with a quota, instead of the route's (0 blocks). */
  quotaPerMinute?: number
  /** Set by the registration endpoint (RFC 7591) and the developer console only: the client registered itself. */
  selfRegistration?: SelfRegistration
  /** The user whose app it is (the developer console's). */
  ownerId?: string
}

/** What `updateClient` may change; a field left out stays as it is. */
export interface ClientUpdate {
  redirectUris?: string[]
  /** Replaces the list; `[]` removes every allowed origin. */
  allowedOrigins?: string[]
  responseTypes?: ResponseType[]
  /** Replaces the grant types (and the response types with them); response types alone keep the device grant. */
  grantTypes?: string[]
  /** `null` removes the client's own limit: the routes' defaults apply again. */
  quotaPerMinute?: number | null
}

/** A URI, origin or scope list as a field: room for any real one (each is checked further below). */
const text = { type: 'string', minLength: 1, maxLength: 2048 } as const

/**
 * A new client's fields and their limits, for every door: the admin API validates its body with
 * this schema (its fields by their snake_case names), and `registerClient`, which the CLI calls,
 * checks the same limits.
 */
export const newClientSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'redirectUris'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    redirectUris: { type: 'array', minItems: 1, maxItems: 20, items: text },
    scope: text,
    responseTypes: { type: 'array', minItems: 1, items: { enum: ['code', 'token'] } },
    grantTypes: { type: 'array', minItems: 1, maxItems: 10, items: { enum: GRANT_TYPES } },
    requirePkce: { type: 'boolean' },
    public: { type: 'boolean' },
    allowedOrigins: { type: 'array', maxItems: 20, items: text },
    resourceServer: { type: 'boolean' },
    macAlgorithm: { enum: ['HmacSha1', 'HmacSha256'] },
    accessTokenTtl: { type: 'integer', minimum: 1 },
    refreshTokenTtl: { type: 'integer', minimum: 1 },
    quotaPerMinute: { type: 'integer', minimum: 0, maximum: 1_000_000_000 }
  }
} as const

const { name: NAME, redirectUris: REDIRECT_URIS, allowedOrigins: ALLOWED_ORIGINS, quotaPerMinute: QUOTA } = newClientSchema.properties

/** A client's own quota: whole requests a minute, 0 (blocked) to a billion. */
function checkQuota (quota: number | null | undefined): void {
  if (quota !== undefined && quota !== null && (!Number.isInteger(quota) || quota < QUOTA.minimum || quota > QUOTA.maximum)) throw new RegistrationError(`quota per minute must be a whole number from ${QUOTA.minimum} to ${QUOTA.maximum}`)
}

// Every operator action takes the plugin's audit trail optionally (`app.macgate.events`): the CLI,
// in a process of its own, has none; the admin API passes its gateway's.

/** A public client may register private-use schemes (a native app, RFC 8252 §7.1). */
function checkRedirectUris (uris: string[], isPublic: boolean): void {
  if (uris.length === 0) throw new RegistrationError('at least one redirect URI is required')
  if (uris.length > REDIRECT_URIS.maxItems) throw new RegistrationError(`at most ${REDIRECT_URIS.maxItems} redirect URIs`)
  for (const uri of uris) {
    const problem = registrationProblem(uri, { privateUse: isPublic })
    if (problem !== undefined) throw new RegistrationError(`redirect URI ${uri} ${problem}`)
  }
}

/** The allowed origins' bounds and form, as at registration (the developer console checks them so too). */
export function checkAllowedOrigins (origins: string[]): void {
  if (origins.length > ALLOWED_ORIGINS.maxItems) throw new RegistrationError(`at most ${ALLOWED_ORIGINS.maxItems} allowed origins`)
  for (const origin of origins) {
    const problem = originProblem(origin)
    if (problem !== undefined) throw new RegistrationError(`allowed origin ${origin} ${problem}`)
  }
}

/**
 * The response types, once each. A confidential client requiring PKCE gets only the code grant
 * (the implicit grant has no PKCE); a public client requires PKCE for codes and gets the implicit
 * grant only when it asks for it (RFC 9700 §2.1.2 discourages it; the spec offers it to apps
 * without a server).
 */
function checkResponseTypes (types: string[], requirePkce: boolean, isPublic: boolean): ResponseType[] {
  const unique = [...new Set(types)]
  if (unique.length === 0 || unique.some((type) => type !== 'code' && type !== 'token')) {
    throw new RegistrationError('response types must be code, token or both')
  }
  checkImplicit(unique as ResponseType[], requirePkce, isPublic)
  return unique as ResponseType[]
}

function checkImplicit (responseTypes: ResponseType[], requirePkce: boolean, isPublic: boolean): void {
  if (requirePkce && !isPublic && responseTypes.includes('token')) {
    throw new RegistrationError('a client requiring PKCE cannot use response type token (the implicit grant has no PKCE)')
  }
}

/**
 * The grant types asked for (RFC names) and the response types they allow; response types given
 * beside them must be those. A device-only client has no response type.
 */
function checkGrantTypes (types: string[], responseTypes: string[] | undefined, requirePkce: boolean, isPublic: boolean): { grantTypes: GrantType[], responseTypes: ResponseType[] } {
  const normal = normalGrantTypes(types)
  if ('problem' in normal) throw new RegistrationError(normal.problem)
  const implied = responseTypesOf(normal.grantTypes)
  if (responseTypes !== undefined) {
    const given = new Set(responseTypes)
    if (given.size !== implied.length || implied.some((type) => !given.has(type))) {
      throw new RegistrationError(`response types ${[...given].join(',')} do not match grant types ${normal.grantTypes.join(',')} (authorization_code is code, implicit is token)`)
    }
  }
  checkImplicit(implied, requirePkce, isPublic)
  return { grantTypes: normal.grantTypes, responseTypes: implied }
}

function withTheirGrantTypes (responseTypes: ResponseType[]): { grantTypes: GrantType[], responseTypes: ResponseType[] } {
  return { grantTypes: grantTypesOfResponseTypes(responseTypes), responseTypes }
}

/**
 * Registers a client; the secret is returned this once and only its hash is kept. A public client
 * gets no secret (`clientSecret` undefined). `clock` (here and below): the plugin's where there is
 * one (`app.macgate.clock`); default Date.now.
 */
export async function registerClient (store: ClientStore, registry: ScopeRegistry, input: NewClient & { public: true }, events?: AuditEvents, clock?: () => number): Promise<{ client: ClientRecord, clientSecret: undefined }>
export async function registerClient (store: ClientStore, registry: ScopeRegistry, input: NewClient & { public?: false }, events?: AuditEvents, clock?: () => number): Promise<{ client: ClientRecord, clientSecret: string }>
export async function registerClient (store: ClientStore, registry: ScopeRegistry, input: NewClient, events?: AuditEvents, clock?: () => number): Promise<{ client: ClientRecord, clientSecret: string | undefined }>
export async function registerClient (store: ClientStore, registry: ScopeRegistry, input: NewClient, events?: AuditEvents, clock: () => number = Date.now): Promise<{ client: ClientRecord, clientSecret: string | undefined }> {
  if (input.name.trim() === '' || input.name.length > NAME.maxLength) throw new RegistrationError(`name must be ${NAME.minLength} to ${NAME.maxLength} characters`)
  checkRedirectUris(input.redirectUris, input.public === true)
  checkAllowedOrigins(input.allowedOrigins ?? [])
  checkQuota(input.quotaPerMinute)
  const scopes = parseScope(input.scope ?? '1 3')
  if (scopes.length === 0) throw new RegistrationError('at least one scope is required')
  const unknown = scopes.find((scope) => !registry.has(scope))
  if (unknown !== undefined) throw new RegistrationError(`scope ${unknown} is not in the scope registry`)
  const isPublic = input.public === true
  if (isPublic && input.requirePkce === false) throw new RegistrationError('a public client always requires PKCE')
  if (isPublic && input.resourceServer === true) throw new RegistrationError('a public client cannot be a resource server (it has no secret to introspect with)')
  const requirePkce = isPublic || input.requirePkce === true
  const { grantTypes, responseTypes } = input.grantTypes === undefined
    ? withTheirGrantTypes(checkResponseTypes(input.responseTypes ?? (requirePkce ? ['code'] : ['code', 'token']), requirePkce, isPublic))
    : checkGrantTypes(input.grantTypes, input.responseTypes, requirePkce, isPublic)
  for (const ttl of [input.accessTokenTtl, input.refreshTokenTtl]) {
    if (ttl !== undefined && (!Number.isInteger(ttl) || ttl < 1)) throw new RegistrationError('token lifetimes must be whole seconds')
  }
  if (input.macAlgorithm !== undefined && input.macAlgorithm !== 'HmacSha1' && input.macAlgorithm !== 'HmacSha256') {
    throw new RegistrationError('mac algorithm must be HmacSha1 or HmacSha256')
  }
  const clientSecret = isPublic ? undefined : randomBase64Url(32)
  const client: ClientRecord = {
    id: newClientId(),
    name: input.name.trim(),
    secretHash: clientSecret === undefined ? '' : hashSecret(clientSecret),
    redirectUris: input.redirectUris,
    scopes,
    responseTypes,
    grantTypes,
    requirePkce,
    ...(isPublic && { public: true as const }),
    ...(input.allowedOrigins !== undefined && input.allowedOrigins.length > 0 && { allowedOrigins: [...new Set(input.allowedOrigins)] }),
    ...(input.resourceServer === true && { resourceServer: true }),
    ...(input.macAlgorithm === 'HmacSha256' && { macAlgorithm: 'HmacSha256' as const }),
    ...(input.accessTokenTtl !== undefined && { accessTokenTtl: input.accessTokenTtl }),
    ...(input.refreshTokenTtl !== undefined && { refreshTokenTtl: input.refreshTokenTtl }),
    ...(input.quotaPerMinute !== undefined && { quotaPerMinute: input.quotaPerMinute }),
    ...(input.selfRegistration !== undefined && { selfRegistration: input.selfRegistration }),
    ...(input.ownerId !== undefined && { ownerId: input.ownerId }),
    createdAt: clock()
  }
  await store.saveClient(client)
  events?.record('client.registered', { clientId: client.id, name: client.name })
  return { client, clientSecret }
}

/** A client as an operator may see it: no secret's hash, nor its registration access token's. */
export function clientWithoutSecrets ({ secretHash: _secret, previousSecretHash: _previous, ...client }: ClientRecord): Omit<ClientRecord, 'secretHash' | 'previousSecretHash' | 'selfRegistration'> & { selfRegistration?: Omit<SelfRegistration, 'accessTokenHash'> } {
  if (client.selfRegistration === undefined) return client
  const { accessTokenHash: _token, ...selfRegistration } = client.selfRegistration
  return { ...client, selfRegistration }
}

/**
 * Changes a registered client's redirect URIs, allowed origins, grant and response types or own quota,
 * checked as at registration. Codes already issued keep the redirect URI they were issued for;
 * browsers on an origin removed here lose CORS access within the origin cache's lifetime, and a
 * quota reaches every gateway within the client limits' lifetime (10 s).
 */
export async function updateClient (store: ClientStore, clientId: string, update: ClientUpdate, events?: AuditEvents): Promise<ClientRecord> {
  if (update.allowedOrigins !== undefined) checkAllowedOrigins(update.allowedOrigins)
  checkQuota(update.quotaPerMinute)
  const client = await store.getClient(clientId)
  if (client === undefined) throw new NoSuchRecordError(`no client ${clientId}`)
  if (update.redirectUris !== undefined) checkRedirectUris(update.redirectUris, client.public === true)
  const changes: ClientChanges = {
    ...(update.redirectUris !== undefined && { redirectUris: [...new Set(update.redirectUris)] }),
    ...(update.allowedOrigins !== undefined && { allowedOrigins: [...new Set(update.allowedOrigins)] }),
    ...grantChanges(client, update),
    ...(update.quotaPerMinute !== undefined && { quotaPerMinute: update.quotaPerMinute })
  }
  const updated = await store.updateClient(clientId, changes)
  if (updated === undefined) throw new NoSuchRecordError(`no client ${clientId}`)
  events?.record('client.updated', { clientId, fields: Object.keys(changes) })
  return updated
}

/** The grant and response types an update asks for: by grant types, or by response types keeping the device grant. */
function grantChanges (client: ClientRecord, { grantTypes, responseTypes }: ClientUpdate): Pick<ClientChanges, 'grantTypes' | 'responseTypes'> {
  const isPublic = client.public === true
  if (grantTypes !== undefined) return checkGrantTypes(grantTypes, responseTypes, client.requirePkce, isPublic)
  if (responseTypes === undefined) return {}
  const checked = checkResponseTypes(responseTypes, client.requirePkce, isPublic)
  return { responseTypes: checked, grantTypes: grantTypesWithResponseTypes(client.grantTypes, checked) }
}

const USERNAME = /^[A-Za-z0-9._@-]{1,64}$/

function checkPassword (password: string): void {
  if (password.length < 8 || password.length > 1024) throw new RegistrationError('password must be 8 to 1024 characters')
}

export interface NewUserOptions {
  events?: AuditEvents
  clock?: () => number
  /** The password hash's scrypt cost; the default unless a caller (a test's fixture users) needs it cheap. */
  passwordCost?: ScryptCost
}

export async function createUser (store: AccountStore, username: string, password: string, { events, clock = Date.now, passwordCost }: NewUserOptions = {}): Promise<{ userId: string }> {
  if (!USERNAME.test(username)) throw new RegistrationError('username must be 1 to 64 letters, digits or . _ @ -')
  checkPassword(password)
  const userId = randomUUID()
  const created = await store.createUser({ id: userId, username, passwordHash: await hashPassword(password, passwordCost), createdAt: clock() })
  if (!created) throw new RegistrationError(`username ${username} is taken`)
  events?.record('user.created', { userId, username })
  return { userId }
}

/** A new password; every session of the user ends on every instance (sign in again). */
export async function changePassword (store: AccountStore, username: string, password: string, events?: AuditEvents): Promise<void> {
  checkPassword(password)
  const user = await store.getUserByName(username)
  if (user === undefined || !await store.updateUser({ ...user, passwordHash: await hashPassword(password) })) {
    throw new NoSuchRecordError(`no user ${username}`)
  }
  await store.endSessions(user.id)
  events?.record('user.password_changed', { userId: user.id, username })
}

/**
 * A new secret for the client, returned this once; the old one keeps working for `graceSeconds`
 * (0: it stops at once), so that a deployment can roll the new one out without downtime.
 */
export async function rotateClientSecret (store: ClientStore, clientId: string, graceSeconds = 86_400, events?: AuditEvents, clock: () => number = Date.now): Promise<{ clientSecret: string }> {
  if (!Number.isInteger(graceSeconds) || graceSeconds < 0) throw new RegistrationError('the grace period is whole seconds, 0 or more')
  if ((await store.getClient(clientId))?.public === true) throw new RegistrationError(`client ${clientId} is public: it has no secret`)
  const clientSecret = randomBase64Url(32)
  const rotated = await store.rotateClientSecret(clientId, hashSecret(clientSecret), clock() + graceSeconds * 1000)
  if (rotated === undefined) throw new NoSuchRecordError(`no client ${clientId}`)
  events?.record('client.secret_rotated', { clientId, graceSeconds })
  return { clientSecret }
}

/** Sets (a username) or clears (`null`) the client's owner: the user whose developer console lists and manages it. */
export async function setClientOwner (store: ClientStore & AccountStore, clientId: string, owner: string | null, events?: AuditEvents): Promise<ClientRecord> {
  const ownerId = owner === null ? null : (await store.getUserByName(owner))?.id
  if (ownerId === undefined) throw new NoSuchRecordError(`no user ${owner!}`)
  const updated = await store.updateClient(clientId, { ownerId })
  if (updated === undefined) throw new NoSuchRecordError(`no client ${clientId}`)
  events?.record('client.owner_changed', { clientId, ownerId })
  return updated
}

/** Allows (or stops) the user's developer console, where the deployment's `developerConsole` is `developers`. */
export async function setDeveloper (store: AccountStore, username: string, developer: boolean, events?: AuditEvents): Promise<void> {
  const user = await store.getUserByName(username)
  if (user === undefined) throw new NoSuchRecordError(`no user ${username}`)
  const { developer: _was, ...rest } = user
  if (!await store.updateUser(developer ? { ...rest, developer: true } : rest)) throw new NoSuchRecordError(`no user ${username}`)
  events?.record('user.developer_changed', { userId: user.id, username, developer })
}

/** Removes the client and revokes every grant issued to it, on every instance. */
export async function removeClient (store: ClientStore, clientId: string, events?: AuditEvents): Promise<void> {
  if (!await store.removeClient(clientId)) throw new NoSuchRecordError(`no client ${clientId}`)
  events?.record('client.removed', { clientId })
}

/**
 * Removes the user: every session of theirs ends and every grant of theirs is revoked, on every
 * instance, and their consents are forgotten. Resolves to how many grants were revoked.
 */
export async function removeUser (store: AccountStore & ConsentStore & GrantIndex & TokenStore, username: string, events?: AuditEvents): Promise<{ userId: string, grants: number }> {
  const user = await store.getUserByName(username)
  if (user === undefined) throw new NoSuchRecordError(`no user ${username}`)
  // Sessions first (no new grant from a signed-in browser), the user record last: if the store fails
  // half-way, the user is still there and the same command finishes the job.
  await store.endSessions(user.id)
  const grants = (await revokeUserGrants(store, user.id)).length
  for (const { clientId } of await store.listConsents(user.id)) await store.forgetConsent(user.id, clientId)
  const removed = await store.removeUser(username)
  if (removed === undefined) throw new NoSuchRecordError(`no user ${username}`)
  events?.record('user.removed', { userId: user.id, username, grants })
  return { userId: user.id, grants }
}

/** The user's grants that may still have live records (those of clients removed since, revoked with them, left out). */
export async function listUserGrants (store: AccountStore & GrantIndex & ClientReader, username: string): Promise<UserGrant[]> {
  const user = await store.getUserByName(username)
  if (user === undefined) throw new NoSuchRecordError(`no user ${username}`)
  const grants = await store.listUserGrants(user.id)
  const clients = new Set<string>()
  for (const clientId of new Set(grants.map((grant) => grant.clientId))) if (await store.getClient(clientId) !== undefined) clients.add(clientId)
  return grants.filter((grant) => clients.has(grant.clientId))
}

/** Revokes one grant of the user's (by its id), on every instance. */
export async function revokeUserGrant (store: AccountStore & GrantIndex & TokenStore, username: string, grantId: string, events?: AuditEvents): Promise<void> {
  const user = await store.getUserByName(username)
  if (user === undefined) throw new NoSuchRecordError(`no user ${username}`)
  const [grant] = await revokeUserGrants(store, user.id, (one) => one.grantId === grantId)
  if (grant === undefined) throw new NoSuchRecordError(`user ${username} has no grant ${grantId}`)
  events?.record('grant.revoked', { grantId, clientId: grant.clientId, by: 'operator' })
}
