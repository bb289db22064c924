import type { FastifyRequest } from 'fastify'
import { errors } from '../core/errors.js'
import type { MacgateConfig } from '../config/options.js'
import type { ClientRecord } from '../store/store.js'
import { single, type Params } from '../core/params.js'
import { ClientAuthThrottle } from './client-auth-throttle.js'
import { isClientId, secretMatches } from '../core/credentials.js'

interface Credentials {
  clientId: string
  clientSecret: string
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
  if (clientSecret === undefined || clientSecret === '') throw errors.invalidRequest('client_secret is missing')
  return { clientId, clientSecret }
}

/** During a rotation's grace period the secret before it still authenticates. */
function previousSecretMatches (clientSecret: string, client: ClientRecord): boolean {
  return client.previousSecretHash !== undefined && (client.previousSecretUntil ?? 0) > Date.now() && secretMatches(clientSecret, client.previousSecretHash)
}

/**
 * The client, once its id and secret check out (96002, 96001, 96003 otherwise), unless failures
 * for this client or address are over their limit (429).
 */
export async function authenticateClient (config: MacgateConfig, request: FastifyRequest, params: Params): Promise<ClientRecord> {
  const { clientId, clientSecret } = credentials(request, params)
  if (!isClientId(clientId)) throw errors.invalidRequest('client_id malformed')
  const throttle = new ClientAuthThrottle(config, clientId, request.ip)
  const [client] = await Promise.all([config.store.getClient(clientId), throttle.refuseIfBlocked()])
  if (client === undefined) {
    await throttle.failed({ knownClient: false })
    throw errors.clientNotExists()
  }
  if (!secretMatches(clientSecret, client.secretHash) && !previousSecretMatches(clientSecret, client)) {
    await throttle.failed({ knownClient: true })
    throw errors.invalidClient()
  }
  return client
}
