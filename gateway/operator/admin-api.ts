import type { FastifyError, FastifyInstance } from 'fastify'
import {
  changePassword, compileValidator, createRegistrationToken, createUser, errors, listRegistrationTokens, revokeRegistrationToken, newClientSchema, listUserGrants, NoSuchRecordError, registerClient, RegistrationError, removeClient,
  removeUser, revokeUserGrant, rotateClientSecret, setClientOwner, setDeveloper, updateClient, type AuditEvents, type ClientRecord, type ClientUpdate, type RegistrationTokenRecord, type ScopeRegistry, type Store
} from '../../plugin/index.ts'

export interface AdminApiOptions {
  store: Store
  /** The permission registry clients are registered against (the gateway's `scopes`). */
  registry: ScopeRegistry
  /** Where operator actions are recorded (the gateway's audit trail). */
  events: AuditEvents
  /** The plugin's clock where the gateway has one (`app.macgate.clock`); default Date.now. */
  clock?: () => number
}

const text = { type: 'string', minLength: 1, maxLength: 2048 }
const password = { type: 'string', minLength: 1, maxLength: 1024 }
const object = (properties: Record<string, unknown>, required: string[] = []) => ({ type: 'object', additionalProperties: false, required, properties })

// A new client's fields are the plugin's schema (one set of limits with the CLI), by the API's names.
const field = newClientSchema.properties
const { redirectUris, allowedOrigins, quotaPerMinute, responseTypes, grantTypes } = field

const schemas = {
  newClient: object({
    name: field.name,
    redirect_uris: redirectUris,
    scope: field.scope,
    response_types: responseTypes,
    grant_types: grantTypes,
    require_pkce: field.requirePkce,
    public: field.public,
    allowed_origins: allowedOrigins,
    resource_server: field.resourceServer,
    mac_algorithm: field.macAlgorithm,
    quota_per_minute: quotaPerMinute
  }, ['name', 'redirect_uris']),
  // A field given replaces the registered one; at least one is given.
  // A null quota removes the client's own limit (the routes' defaults apply again).
  clientUpdate: { ...object({ redirect_uris: redirectUris, allowed_origins: allowedOrigins, response_types: responseTypes, grant_types: grantTypes, quota_per_minute: { anyOf: [quotaPerMinute, { type: 'null' }] }, owner: { anyOf: [{ type: 'string', minLength: 1, maxLength: 64 }, { type: 'null' }] } }), minProperties: 1 },
  // The user's developer console (gateway setting developerConsole "developers").
  userUpdate: object({ developer: { type: 'boolean' } }, ['developer']),
  rotation: object({ grace_seconds: { type: 'integer', minimum: 0, maximum: 31_536_000 } }),
  newRegistrationToken: object({ uses: { type: 'integer', minimum: 1, maximum: 1_000_000 }, expires_in: { type: 'integer', minimum: 1, maximum: 31_536_000 } }),
  newUser: object({ username: text, password }, ['username', 'password']),
  newPassword: object({ password }, ['password'])
}

/**
 * A body validator with the plugin's sentences (`body.name must be 1 to 100 characters`), the ones
 * `registerClient` answers the CLI with; a SchemaError is answered as the 400 it is.
 */
function pluginValidator ({ schema }: { schema: object }): (data: unknown) => { value: unknown } | { error: Error } {
  const validate = compileValidator(schema, 'body')
  return (data) => {
    try {
      return { value: validate(data) }
    } catch (error) {
      return { error: error as Error }
    }
  }
}

/** A client as the API shows it: no secret hashes, snake_case like the OAuth endpoints. */
function clientView ({ secretHash: _secret, previousSecretHash: _previous, ...client }: ClientRecord, now: number): object {
  return {
    client_id: client.id,
    name: client.name,
    redirect_uris: client.redirectUris,
    scope: client.scopes.join(' '),
    response_types: client.responseTypes,
    grant_types: client.grantTypes,
    require_pkce: client.requirePkce,
    public: client.public === true,
    allowed_origins: client.allowedOrigins ?? [],
    resource_server: client.resourceServer === true,
    mac_algorithm: client.macAlgorithm ?? 'HmacSha1',
    // Registered by a developer (RFC 7591) rather than an operator: shown unverified to users.
    self_registered: client.selfRegistration !== undefined,
    // The user (by id) whose developer console lists and manages it.
    ...(client.ownerId !== undefined && { owner_id: client.ownerId }),
    ...(client.quotaPerMinute !== undefined && { quota_per_minute: client.quotaPerMinute }),
    ...(client.previousSecretUntil !== undefined && client.previousSecretUntil > now && { previous_secret_until: new Date(client.previousSecretUntil).toISOString() }),
    created_at: new Date(client.createdAt).toISOString()
  }
}

/**
 * The admin API (JSON, under `/admin`), on the admin listener only. Every action is the same
 * function the CLI calls (the plugin's operator/), so both refuse and record alike: an unknown
 * record is a 404, a refused registration a 400 naming the field, a store outage a 503.
 */
export async function adminApi (app: FastifyInstance, { store, registry, events, clock = Date.now }: AdminApiOptions): Promise<void> {
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (error instanceof NoSuchRecordError) return await reply.code(404).send({ error: 'not_found', message: error.message })
    if (error instanceof RegistrationError) return await reply.code(400).send({ error: 'invalid_request', message: error.message })
    if (errors.storeUnavailable.is(error)) return await reply.code(503).send({ error: 'store_unavailable', message: 'the store cannot be reached' })
    if (error.validation !== undefined || error.statusCode === 400 || error.statusCode === 415) {
      return await reply.code(error.statusCode ?? 400).send({ error: 'invalid_request', message: error.message })
    }
    request.log.error({ err: error }, 'admin API failed')
    return await reply.code(500).send({ error: 'internal', message: 'internal error' })
  })

  app.get('/admin/clients', async () => (await store.listClients()).map((client) => clientView(client, clock())))

  app.post<{ Body: { name: string, redirect_uris: string[], scope?: string, response_types?: Array<'code' | 'token'>, grant_types?: string[], require_pkce?: boolean, public?: boolean, allowed_origins?: string[], resource_server?: boolean, mac_algorithm?: 'HmacSha1' | 'HmacSha256', quota_per_minute?: number } }>(
    '/admin/clients', { schema: { body: schemas.newClient }, validatorCompiler: pluginValidator }, async (request, reply) => {
      const body = request.body
      const { client, clientSecret } = await registerClient(store, registry, {
        name: body.name,
        redirectUris: body.redirect_uris,
        ...(body.scope !== undefined && { scope: body.scope }),
        ...(body.response_types !== undefined && { responseTypes: body.response_types }),
        ...(body.grant_types !== undefined && { grantTypes: body.grant_types }),
        ...(body.require_pkce !== undefined && { requirePkce: body.require_pkce }),
        ...(body.public !== undefined && { public: body.public }),
        ...(body.allowed_origins !== undefined && { allowedOrigins: body.allowed_origins }),
        ...(body.resource_server !== undefined && { resourceServer: body.resource_server }),
        ...(body.mac_algorithm !== undefined && { macAlgorithm: body.mac_algorithm }),
        ...(body.quota_per_minute !== undefined && { quotaPerMinute: body.quota_per_minute })
      }, events, clock)
      // A public client has no secret: the answer has no client_secret field at all.
      return await reply.code(201).send({ ...clientView(client, clock()), ...(clientSecret !== undefined && { client_secret: clientSecret }) })
    })

  app.patch<{ Params: { clientId: string }, Body: { redirect_uris?: string[], allowed_origins?: string[], response_types?: Array<'code' | 'token'>, grant_types?: string[], quota_per_minute?: number | null, owner?: string | null } }>(
    '/admin/clients/:clientId', { schema: { body: schemas.clientUpdate } }, async (request) => {
      const { owner, ...body } = request.body
      // The owner (a username, or null to clear it) first: an unknown user changes nothing.
      const owned = owner === undefined ? undefined : await setClientOwner(store, request.params.clientId, owner, events)
      if (owned !== undefined && Object.keys(body).length === 0) return clientView(owned, clock())
      const update: ClientUpdate = {
        ...(body.redirect_uris !== undefined && { redirectUris: body.redirect_uris }),
        ...(body.allowed_origins !== undefined && { allowedOrigins: body.allowed_origins }),
        ...(body.response_types !== undefined && { responseTypes: body.response_types }),
        ...(body.grant_types !== undefined && { grantTypes: body.grant_types }),
        ...(body.quota_per_minute !== undefined && { quotaPerMinute: body.quota_per_minute })
      }
      return clientView(await updateClient(store, request.params.clientId, update, events), clock())
    })

  app.delete<{ Params: { clientId: string } }>('/admin/clients/:clientId', async (request, reply) => {
    await removeClient(store, request.params.clientId, events)
    return await reply.code(204).send()
  })

  app.post<{ Params: { clientId: string }, Body: { grace_seconds?: number } | undefined }>(
    '/admin/clients/:clientId/secret', {
      schema: { body: schemas.rotation },
      // No body at all means the default grace, as `{}` does.
      preValidation: async (request) => { request.body ??= {} }
    }, async (request) => {
      const grace = request.body?.grace_seconds ?? 86_400
      const now = clock()
      const { clientSecret } = await rotateClientSecret(store, request.params.clientId, grace, events, () => now)
      return { client_id: request.params.clientId, client_secret: clientSecret, previous_secret_until: new Date(now + grace * 1000).toISOString() }
    })

  // Initial access tokens for registration mode "token" (RFC 7591 §3): the value shown once.
  const tokenView = (token: RegistrationTokenRecord): object => ({
    id: token.id, uses: token.uses, uses_left: token.usesLeft, expires_at: new Date(token.expiresAt).toISOString(), created_at: new Date(token.createdAt).toISOString()
  })

  app.get('/admin/registration-tokens', async () => (await listRegistrationTokens(store)).map(tokenView))

  app.post<{ Body: { uses?: number, expires_in?: number } | undefined }>('/admin/registration-tokens', {
    schema: { body: schemas.newRegistrationToken },
    preValidation: async (request) => { request.body ??= {} }
  }, async (request, reply) => {
    const { token, record } = await createRegistrationToken(store, {
      ...(request.body?.uses !== undefined && { uses: request.body.uses }),
      ...(request.body?.expires_in !== undefined && { expiresInSeconds: request.body.expires_in })
    }, events, clock)
    return await reply.code(201).send({ ...tokenView(record), token })
  })

  app.delete<{ Params: { id: string } }>('/admin/registration-tokens/:id', async (request, reply) => {
    await revokeRegistrationToken(store, request.params.id, events)
    return await reply.code(204).send()
  })

  app.post<{ Body: { username: string, password: string } }>('/admin/users', { schema: { body: schemas.newUser } }, async (request, reply) => {
    const { userId } = await createUser(store, request.body.username, request.body.password, { events, clock })
    return await reply.code(201).send({ user_id: userId, username: request.body.username })
  })

  app.delete<{ Params: { username: string } }>('/admin/users/:username', async (request) => {
    const { userId, grants } = await removeUser(store, request.params.username, events)
    return { user_id: userId, grants_revoked: grants }
  })

  app.patch<{ Params: { username: string }, Body: { developer: boolean } }>('/admin/users/:username', { schema: { body: schemas.userUpdate } }, async (request) => {
    await setDeveloper(store, request.params.username, request.body.developer, events)
    return { username: request.params.username, developer: request.body.developer }
  })

  app.put<{ Params: { username: string }, Body: { password: string } }>('/admin/users/:username/password', { schema: { body: schemas.newPassword } }, async (request, reply) => {
    await changePassword(store, request.params.username, request.body.password, events)
    return await reply.code(204).send()
  })

  app.get<{ Params: { username: string } }>('/admin/users/:username/grants', async (request) => {
    const grants = await listUserGrants(store, request.params.username)
    return grants.map(({ clientId, grantId, until }) => ({ grant_id: grantId, client_id: clientId, until: new Date(until).toISOString() }))
  })

  app.delete<{ Params: { username: string, grantId: string } }>('/admin/users/:username/grants/:grantId', async (request, reply) => {
    await revokeUserGrant(store, request.params.username, request.params.grantId, events)
    return await reply.code(204).send()
  })
}
