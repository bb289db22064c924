import { errors } from '../../http/errors.ts'
import type { ClientRecord } from '../../store/store.ts'

/**
 * Both token endpoints' check, once the client is authenticated and before its grant reads a code
 * or token: a grant type the client is not registered for is refused (RFC 6749 §5.2
 * `unauthorized_client`, 96005 in the Xiaomi dialect), whatever it presents.
 */
export function checkGrantAllowed (client: ClientRecord, grantType: string): void {
  if (!(client.grantTypes as readonly string[]).includes(grantType)) throw errors.unauthorizedClient(`client is not registered for grant type ${grantType}`)
}
