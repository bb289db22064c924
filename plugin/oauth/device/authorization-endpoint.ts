import type { FastifyInstance } from 'fastify'
import type { MacgateContext } from '../../config/options.ts'
import { errors } from '../../http/errors.ts'
import { hashSecret, mintToken, newGrantId } from '../../access/credentials.ts'
import { parseScope } from '../../access/scope.ts'
import { single, type Params } from '../../http/params.ts'
import { authenticateClient } from '../client-auth.ts'
import { sendStandardJson } from '../standard-replies.ts'
import { DEVICE_CODE_GRANT } from '../../access/grant-types.ts'
import { displayUserCode, newUserCode, userCodeHash } from './user-code.ts'

export const DEVICE_AUTHORIZATION_PATH = '/oauth2/device_authorization'
/** The verification page, on the issuer: where the user's session cookie (path /oauth2) reaches. */
export const VERIFICATION_PATH = '/oauth2/device'

const WINDOW_MS = 60_000
/** A new user code taken by a live one (about one in 2.5·10^10 per live code) is drawn again. */
const USER_CODE_DRAWS = 5

/** Counts one started authorization for the client; 429 past its limit. */
async function countForClient (config: MacgateContext, clientId: string): Promise<void> {
  const { count, resetMs } = await config.store.countHit(`device:client:${clientId}`, WINDOW_MS)
  if (count > config.deviceAuthorizationRateLimit.perClient) {
    const retryAfter = Math.max(1, Math.ceil(resetMs / 1000))
    throw errors.tooManyRequests(`too many device authorizations for this client; retry in ${retryAfter} s`, { retryAfter })
  }
}

/**
 * RFC 8628 §3.1-3.2: a device asks for a device code and a user code. In order: the client, as at
 * the token endpoint (a public client by its client_id alone: PKCE does not apply to this grant),
 * registered for the grant (else unauthorized_client); the per-client limit (the per-address one is
 * the route's); the scope, the client's own when none is asked for. Answered in §10's plain JSON;
 * the device code is a token (its grant id, 256 random bits, the server's tag) kept only hashed.
 * Registered only when the deployment has an issuer: the user types the verification URI.
 */
export function deviceAuthorizationRoute (fastify: FastifyInstance, config: MacgateContext, issuer: string): void {
  fastify.post(DEVICE_AUTHORIZATION_PATH, {
    config: { rateLimit: { max: config.deviceAuthorizationRateLimit.perAddress, timeWindow: WINDOW_MS } }
  }, async (request, reply) => {
    const params = (request.body ?? {}) as Params
    const client = await authenticateClient(config, request, params, { allowPublic: true })
    if (!client.grantTypes.includes(DEVICE_CODE_GRANT)) throw errors.unauthorizedClient('the client is not registered for the device grant')
    await countForClient(config, client.id)
    const requested = parseScope(single(params, 'scope') ?? '')
    const scope = config.registry.check(requested.length === 0 ? client.scopes : requested, client.scopes)

    const grantId = newGrantId()
    const deviceCode = mintToken(config.secret, grantId)
    const record = {
      grantId,
      clientId: client.id,
      scope,
      expiresAt: config.clock() + config.deviceCodeTtl * 1000,
      interval: config.devicePollInterval,
      status: 'pending' as const
    }
    let userCode: string | undefined
    for (let draw = 0; draw < USER_CODE_DRAWS && userCode === undefined; draw++) {
      const candidate = newUserCode()
      if (await config.store.saveDeviceCode(hashSecret(deviceCode), userCodeHash(candidate), record)) userCode = candidate
    }
    if (userCode === undefined) throw errors.internal('no free user code')
    config.events.record('device.started', { grantId, clientId: client.id, scope })
    const shown = displayUserCode(userCode)
    const verificationUri = `${issuer}${VERIFICATION_PATH}`
    return await sendStandardJson(reply, {
      device_code: deviceCode,
      user_code: shown,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?${new URLSearchParams({ user_code: shown }).toString()}`,
      expires_in: config.deviceCodeTtl,
      interval: config.devicePollInterval
    })
  })
}
