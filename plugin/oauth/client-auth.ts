import type { FastifyRequest } from 'fastify'
import { errors } from '../http/errors.ts'
import type { MacgateContext } from '../config/options.ts'
import type { ClientRecord } from '../store/store.ts'
import { single, type Params } from '../http/params.ts'
import { ClientAuthThrottle } from './client-auth-throttle.ts'
import { isClientId, secretMatches } from '../access/credentials.ts'

interface Credentials {
  clientId: string
  /** Undefined: none sent, which only a public client may do. */
  clientSecret: string | undefined
}

export function usesBasicAuth (request: FastifyRequest): boolean {
  return /^basic /i.test(request.headers.authorization ?? '')
}

/** RFC 6749 §2.3.1: both parts form-encoded, then joined by a colon and base64-encoded. */
function basicCredentials (header: string): Credentials {
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon === -1) throw errors.invalidRequest('malformed Basic credentials')
  try {
    const [clientId, clientSecret] = [decoded.slice(0, colon), decoded.slice(colon + 1)]
      .map((part) => decodeURIComponent(part.replaceAll('+', ' '))) as [string, string]
    return { clientId, clientSecret }
  } catch {
    throw errors.invalidRequest('malformed Basic credentials')
  }
}

function credentials (request: FastifyRequest, params: Params): Credentials {
  const clientId = single(params, 'client_id')
  const clientSecret = single(params, 'client_secret')
  if (usesBasicAuth(request)) {
    if (clientSecret !== undefined) throw errors.invalidRequest('client authenticated both by Basic and by client_secret')
    const basic = basicCredentials(request.headers.authorization!)
    if (clientId !== undefined && clientId !== basic.clientId) throw errors.invalidRequest('client_id differs from the Basic credentials')
    return basic
  }
  if (clientId === undefined || clientId === '') throw errors.invalidRequest('client_id is missing')
  return { clientId, clientSecret: clientSecret === '' ? undefined : clientSecret }
}

/** During a rotation's grace period the secret before it still authenticates. */
function previousSecretMatches (clientSecret: string, client: ClientRecord, now: number): boolean {
  return client.previousSecretHash !== undefined && (client.previousSecretUntil ?? 0) > now && secretMatches(clientSecret, client.previousSecretHash)
}

export interface ClientAuthOptions {
  /** Whether a public client, identified by its client_id alone, may use the endpoint. */
  allowPublic: boolean
}

/**
 * The client, once it has authenticated: a confidential client by its id and secret (96002 for a
 * missing secret, 96001, 96003), unless failures for this client or address are over their limit
 * (429). A public client (RFC 6749 §2.1) is named by its client_id alone, where the endpoint
 * admits one: a secret sent for it is refused (96003: the caller believes it confidential, and a
 * public client never passes for a confidential one), as is a public client where none is
 * admitted (96005). Without a secret, an unknown or confidential client_id gets the 96002 it got
 * before public clients existed.
 */
export async function authenticateClient (config: MacgateContext, request: FastifyRequest, params: Params, { allowPublic }: ClientAuthOptions = { allowPublic: true }): Promise<ClientRecord> {
  const { clientId, clientSecret } = credentials(request, params)
  if (!isClientId(clientId)) throw errors.invalidRequest('client_id malformed')
  const throttle = new ClientAuthThrottle(config, clientId, request.ip)
  const [client] = await Promise.all([config.store.getClient(clientId), throttle.refuseIfBlocked()])
  if (clientSecret === undefined) {
    if (client?.public !== true) throw errors.invalidRequest('client_secret is missing')
    if (!allowPublic) throw errors.unauthorizedClient('a public client cannot use this endpoint')
    return client
  }
  if (client === undefined) {
    await throttle.failed({ knownClient: false })
    throw errors.clientNotExists()
  }
  if (client.public === true) throw errors.invalidClient('a public client has no secret: send client_id alone')
  if (!secretMatches(clientSecret, client.secretHash) && !previousSecretMatches(clientSecret, client, config.clock())) {
    await throttle.failed({ knownClient: true })
    throw errors.invalidClient()
  }
  return client
}
