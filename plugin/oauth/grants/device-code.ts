import { errors } from '../../http/errors.ts'
import type { MacgateContext } from '../../config/options.ts'
import type { ClientRecord } from '../../store/store.ts'
import { required, type Params } from '../../http/params.ts'
import { grantIdOf, hashSecret } from '../../access/credentials.ts'
import { issueGrantTokens } from './grant-tokens.ts'

/** How much sooner than the interval a poll may come (network jitter) before it is too soon. */
export const POLL_TOLERANCE_MS = 1000

/**
 * grant_type=urn:ietf:params:oauth:grant-type:device_code (RFC 8628 §3.4-3.5), for a client the
 * endpoint found registered for it. In order: the deployment offers the grant (an issuer); the device code is
 * ours (its tag, checked without a store read); then one poll, judged by the store atomically so
 * that every instance judges alike: too soon (slow_down, the interval 5 s longer), pending,
 * denied, expired, or approved. Approved: the code grant's token set, redeemed once by the store's
 * own step, so that two racing pollers get one token set between them; the loser, and any later
 * poll, gets invalid_grant. No grant is revoked on a second redemption (unlike a code): a device
 * code only ever travels between the device and us, so a second poll is the device's own retry.
 */
export async function redeemDeviceCode (config: MacgateContext, client: ClientRecord, params: Params): Promise<object> {
  const { store } = config
  if (config.issuer === undefined) throw errors.unsupportedGrantType('the device grant needs the deployment\'s issuer')
  const deviceCode = required(params, 'device_code')
  const grantId = grantIdOf(config.secret, deviceCode)
  if (grantId === undefined) throw errors.invalidGrant('device_code unknown')
  const hash = hashSecret(deviceCode)
  const { state, record } = await store.pollDeviceCode(hash, grantId, client.id, POLL_TOLERANCE_MS)
  // Another client's code: the store left it untouched.
  if (state === 'other_client') throw errors.invalidGrant('device_code was issued to another client')
  if (state === 'missing' || record === undefined) throw errors.invalidGrant('device_code unknown')
  if (state === 'spent') throw errors.invalidGrant('device_code already used')
  if (state === 'expired') throw errors.expiredToken()
  if (state === 'slow_down') throw errors.slowDown(`polled too often: wait ${record.interval} s between polls`)
  if (state === 'pending') throw errors.authorizationPending()
  if (state === 'denied') throw errors.deviceAccessDenied()
  // Approved: the store recorded who approved it.
  const userId = record.userId!
  // Removed on the user's apps page since (the consent forgotten): the approval goes with it.
  const granted = await store.getConsent(userId, client.id)
  if (!record.scope.every((scope) => granted.includes(scope))) throw errors.deviceAccessDenied('the user removed the app\'s access')

  // No redirect URI: a device has none (a refresh at the standard endpoint compares none).
  const { tokens, body } = await issueGrantTokens(config, client, { grantId, userId, scope: record.scope }, '')
  const result = await store.redeemDeviceCode(hash, tokens)
  if (result === 'spent') throw errors.invalidGrant('device_code already used')
  if (result !== 'ok') throw errors.invalidGrant('device_code unknown')
  config.events.record('device.issued', { grantId, clientId: client.id, userId })
  return body
}
