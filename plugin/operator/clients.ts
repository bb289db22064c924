// The operator's actions on clients: register, change, own, remove.
import { parseScope, type ScopeRegistry } from '../access/scope.ts'
import { hashSecret, newClientId, randomBase64Url } from '../access/credentials.ts'
import { grantTypesWithResponseTypes } from '../access/grant-types.ts'
import type { AccountStore, ClientChanges, ClientRecord, ClientStore, SelfRegistration } from '../store/store.ts'
import type { AuditEvents } from '../observe/events.ts'
import { checkAllowedOrigins, checkGrantTypes, checkQuota, checkRedirectUris, checkResponseTypes, NAME, withTheirGrantTypes, type ClientUpdate, type NewClient } from './client-checks.ts'
import { NoSuchRecordError, RegistrationError } from './refusals.ts'

// Every operator action takes the plugin's audit trail optionally (`app.macgate.events`): the CLI,
// in a process of its own, has none; the admin API passes its gateway's.

/**
 * Registers a client; the secret is returned this once and only its hash is kept. A public client
 * gets no secret (`clientSecret` undefined). `clock` (here and in every operator action): the plugin's where there is
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
/** Sets (a username) or clears (`null`) the client's owner: the user whose developer console lists and manages it. */
export async function setClientOwner (store: ClientStore & AccountStore, clientId: string, owner: string | null, events?: AuditEvents): Promise<ClientRecord> {
  const ownerId = owner === null ? null : (await store.getUserByName(owner))?.id
  if (ownerId === undefined) throw new NoSuchRecordError(`no user ${owner!}`)
  const updated = await store.updateClient(clientId, { ownerId })
  if (updated === undefined) throw new NoSuchRecordError(`no client ${clientId}`)
  events?.record('client.owner_changed', { clientId, ownerId })
  return updated
}
/** Removes the client and revokes every grant issued to it, on every instance. */
export async function removeClient (store: ClientStore, clientId: string, events?: AuditEvents): Promise<void> {
  if (!await store.removeClient(clientId)) throw new NoSuchRecordError(`no client ${clientId}`)
  events?.record('client.removed', { clientId })
}
