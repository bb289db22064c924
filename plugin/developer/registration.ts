import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import { registerClient, removeClient } from '../operator/clients.ts'
import { RegistrationError } from '../operator/refusals.ts'
import { ClientMetadataError, metadataView, readClientMetadata, selfRegistrationOf, type ClientMetadata } from './client-metadata.ts'
import type { MacgateContext } from '../config/options.ts'
import { addressBlock } from '../http/address-block.ts'
import { hashSecret, isClientId, randomBase64Url, secretMatches } from '../access/credentials.ts'
import { errors, toOAuthError } from '../http/errors.ts'
import { issuerOf } from '../oauth/metadata-endpoint.ts'
import { sendStandardError, sendStandardJson } from '../oauth/standard-replies.ts'
import type { ClientChanges, ClientRecord } from '../store/store.ts'

/** RFC 7591's registration endpoint; each client's RFC 7592 `registration_client_uri` is below it. */
export const REGISTRATION_PATH = '/oauth2/register'

/** Client metadata is small: a body past this is refused before it is parsed. */
const BODY_LIMIT = 16 * 1024
const BEARER = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i
const MINUTE = 60_000

/** A missing or wrong initial or registration access token: 401 with the Bearer challenge (RFC 6750 §3). */
class BearerError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'BearerError'
  }
}

function bearerToken (request: FastifyRequest, what: string): string {
  const header = request.headers.authorization
  const match = header === undefined ? null : BEARER.exec(header)
  if (match === null) throw new BearerError(`${what} is required (Authorization: Bearer)`)
  return match[1]!
}

/** Where the client's registration is managed (RFC 7592), on the issuer. */
function clientUri (config: MacgateContext, request: FastifyRequest, clientId: string): string {
  return `${issuerOf(config, request)}${REGISTRATION_PATH}/${clientId}`
}

/** A JSON body or the RFC 7591 error a developer can act on; nothing but JSON is read. */
function jsonParser (fastify: FastifyInstance): void {
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (_request, body, done) => {
    try {
      done(null, JSON.parse(body as string))
    } catch {
      done(new ClientMetadataError('invalid_client_metadata', 'the body is not JSON') as unknown as FastifyError)
    }
  })
}

/**
 * Dynamic client registration (RFC 7591) and its management (RFC 7592), plain JSON as the other
 * RFC endpoints (contract §12), served only when the deployment's `registration` is not `off`.
 *
 * `POST /oauth2/register`, in order: in `open` mode the caller's address (an IPv6 one by its /64)
 * is counted, past `registrationRateLimit` a minute 429; in `token` mode an initial access token
 * must be presented (401 otherwise); the metadata is checked (400, RFC 7591 §3.2.2) before the
 * token's use is taken, so that a developer's mistake does not spend it; then one use is taken
 * atomically (a token used up, expired or revoked meanwhile: 401) and the client saved, marked as
 * self-registered with the hash of a new registration access token. The answer (201) is the
 * metadata as stored with the secret (once) and that token.
 *
 * `GET`, `PUT`, `DELETE /oauth2/register/{client_id}` take the registration access token, compared
 * with the kept hash in constant time; a missing or wrong token and an unknown client are the
 * same 401, so that the endpoint tells nothing of which clients exist.
 */
export async function registrationRoutes (fastify: FastifyInstance, config: MacgateContext): Promise<void> {
  const { store, registration: policy } = config
  if (policy.mode === 'off') return
  jsonParser(fastify)
  fastify.addHook('onSend', async (_request, reply) => { reply.header('cache-control', 'no-store').header('pragma', 'no-cache') })
  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (error instanceof ClientMetadataError) return await sendStandardJson(reply, { error: error.code, error_description: error.message }, 400)
    if (error instanceof RegistrationError) return await sendStandardJson(reply, { error: 'invalid_client_metadata', error_description: error.message }, 400)
    if (error instanceof BearerError) {
      reply.header('www-authenticate', 'Bearer realm="macgate", error="invalid_token"')
      return await sendStandardJson(reply, { error: 'invalid_token', error_description: error.message }, 401)
    }
    const failure = toOAuthError(error)
    if (errors.internal.is(failure)) request.log.error({ err: error }, 'registration endpoint failed')
    return await sendStandardError(reply, failure)
  })

  /** The client the registration access token manages; the same 401 for every way it does not. */
  async function managedClient (request: FastifyRequest<{ Params: { clientId: string } }>): Promise<ClientRecord> {
    const token = bearerToken(request, 'the registration access token')
    const { clientId } = request.params
    const client = isClientId(clientId) ? await store.getClient(clientId) : undefined
    const hash = client?.selfRegistration?.accessTokenHash
    if (hash === undefined || !secretMatches(token, hash)) throw new BearerError('the registration access token is not valid for this client')
    return client!
  }

  async function limitOpenRegistrations (request: FastifyRequest): Promise<void> {
    const { count, resetMs } = await store.countHit(`register:${addressBlock(request.ip)}`, MINUTE)
    if (count > config.registrationRateLimit) {
      const retryAfter = Math.max(1, Math.ceil(resetMs / 1000))
      throw errors.tooManyRequests(`too many registrations from this address; retry in ${retryAfter} s`, { retryAfter })
    }
  }

  fastify.post(REGISTRATION_PATH, async (request, reply) => {
    if (policy.mode === 'open') await limitOpenRegistrations(request)
    const initialToken = policy.mode === 'token' ? bearerToken(request, 'an initial access token') : undefined
    const metadata = readClientMetadata(request.body, policy)
    let initialTokenId: string | undefined
    if (initialToken !== undefined) {
      initialTokenId = await store.useRegistrationToken(hashSecret(initialToken), config.clock())
      if (initialTokenId === undefined) throw new BearerError('the initial access token is unknown, used up, expired or revoked')
    }
    const accessToken = randomBase64Url(32)
    const door = { via: policy.mode as 'open' | 'token', ...(initialTokenId !== undefined && { initialTokenId }), accessTokenHash: hashSecret(accessToken) }
    const { client, clientSecret } = await registerClient(store, config.registry, {
      ...clientFields(metadata),
      scope: metadata.scopes.join(' '),
      public: metadata.isPublic,
      ...(policy.defaultQuotaPerMinute !== undefined && { quotaPerMinute: policy.defaultQuotaPerMinute }),
      selfRegistration: selfRegistrationOf(metadata, door)
    }, undefined, config.clock)
    config.events.record('client.registered', { clientId: client.id, name: client.name, by: 'registration', via: door.via, ...(initialTokenId !== undefined && { initialTokenId }), ip: request.ip })
    return await sendStandardJson(reply, {
      ...metadataView(client, client.selfRegistration!),
      ...(clientSecret !== undefined && { client_secret: clientSecret, client_secret_expires_at: 0 }),
      registration_access_token: accessToken,
      registration_client_uri: clientUri(config, request, client.id)
    }, 201)
  })

  const managed = `${REGISTRATION_PATH}/:clientId`

  fastify.get<{ Params: { clientId: string } }>(managed, async (request, reply) => {
    const client = await managedClient(request)
    return await sendStandardJson(reply, { ...metadataView(client, client.selfRegistration!), registration_client_uri: clientUri(config, request, client.id) })
  })

  fastify.put<{ Params: { clientId: string } }>(managed, async (request, reply) => {
    const client = await managedClient(request)
    const body = request.body as Record<string, unknown> | undefined
    // RFC 7592 §2.2: the body names the client it replaces, and a secret it carries must be the client's.
    if (typeof body !== 'object' || body === null || body.client_id !== client.id) throw new ClientMetadataError('invalid_client_metadata', 'client_id must be the client\'s own')
    if (body.client_secret !== undefined && (typeof body.client_secret !== 'string' || !secretMatches(body.client_secret, client.secretHash))) {
      throw new ClientMetadataError('invalid_client_metadata', 'client_secret does not match (the secret never changes by PUT)')
    }
    const metadata = readClientMetadata(body, policy)
    if (metadata.isPublic !== (client.public === true)) throw new ClientMetadataError('invalid_client_metadata', 'a client cannot change between public (none) and confidential')
    const changes: ClientChanges = {
      ...clientFields(metadata),
      scopes: metadata.scopes,
      selfRegistration: selfRegistrationOf(metadata, client.selfRegistration!)
    }
    const updated = await store.updateClient(client.id, changes)
    if (updated === undefined) throw new BearerError('the registration access token is not valid for this client')
    config.events.record('client.updated', { clientId: client.id, fields: Object.keys(changes), by: 'registration', ip: request.ip })
    return await sendStandardJson(reply, { ...metadataView(updated, updated.selfRegistration!), registration_client_uri: clientUri(config, request, client.id) })
  })

  fastify.delete<{ Params: { clientId: string } }>(managed, async (request, reply) => {
    const client = await managedClient(request)
    // As `clients remove`: every grant of the client revoked, on every instance.
    await removeClient(store, client.id)
    config.events.record('client.removed', { clientId: client.id, by: 'registration', ip: request.ip })
    return await reply.code(204).send()
  })
}

/** The client's own fields a registration sets (a PUT replaces them, its scopes beside). */
function clientFields ({ name, redirectUris, grantTypes, responseTypes }: ClientMetadata): Pick<ClientRecord, 'name' | 'redirectUris' | 'grantTypes' | 'responseTypes'> {
  return { name, redirectUris, grantTypes, responseTypes }
}
