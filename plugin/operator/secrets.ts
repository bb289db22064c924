// The operator's action on a client's secret: a new one, the old one kept for a grace period.
import { hashSecret, randomBase64Url } from '../access/credentials.ts'
import type { ClientStore } from '../store/store.ts'
import type { AuditEvents } from '../observe/events.ts'
import { NoSuchRecordError, RegistrationError } from './refusals.ts'

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
