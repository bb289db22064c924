import type { FastifyRequest } from 'fastify'
import type { MacgateContext } from '../config/options.ts'
import { grantIdOf, hashSecret } from '../access/credentials.ts'
import { errors } from '../http/errors.ts'
import { single, type Params } from '../http/params.ts'
import type { AccessTokenRecord, ClientRecord, RefreshTokenRecord } from '../store/store.ts'
import { authenticateClient, type ClientAuthOptions } from './client-auth.ts'

export type FoundToken =
  | { kind: 'access', grantId: string, record: AccessTokenRecord }
  | { kind: 'refresh', grantId: string, record: RefreshTokenRecord }

/**
 * A live token this server issued, access or refresh, by its value. A value without our tag is
 * answered at once, without a store read (like the verifier, forged tokens cost nothing).
 * The hint only orders the two reads (RFC 7009 §2.1: a wrong hint must not hide the token).
 */
export async function findToken (config: MacgateContext, token: string, hint?: string): Promise<FoundToken | undefined> {
  const grantId = grantIdOf(config.secret, token)
  if (grantId === undefined) return undefined
  const hash = hashSecret(token)
  const access = async (): Promise<FoundToken | undefined> => {
    const record = await config.store.getAccessToken(hash, grantId)
    return record === undefined || record.expiresAt <= config.clock() ? undefined : { kind: 'access', grantId, record }
  }
  const refresh = async (): Promise<FoundToken | undefined> => {
    const record = await config.store.getRefreshToken(hash, grantId)
    return record === undefined || record.spent === true || record.expiresAt <= config.clock() ? undefined : { kind: 'refresh', grantId, record }
  }
  const [first, second] = hint === 'refresh_token' ? [refresh, access] : [access, refresh]
  return await first() ?? await second()
}

/** The two RFC token endpoints' first steps: the client authenticates, then `token` is required. */
export async function readTokenRequest (config: MacgateContext, request: FastifyRequest, auth: ClientAuthOptions): Promise<{ client: ClientRecord, token: string, params: Params }> {
  const params = (request.body ?? {}) as Params
  const client = await authenticateClient(config, request, params, auth)
  const token = single(params, 'token')
  if (token === undefined || token === '') throw errors.invalidRequest('token is missing')
  return { client, token, params }
}
