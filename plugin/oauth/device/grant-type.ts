import type { ClientRecord } from '../../store/store.ts'

/** RFC 8628's grant type, as the token endpoint's `grant_type` and the metadata name it. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

/**
 * Whether the client was registered for the device grant (`--grant-types device`). Reads the
 * client's grant types through a loose type: the field comes with the registration issue's change
 * to the client record.
 */
export function registeredForDevice (client: ClientRecord): boolean {
  const { grantTypes } = client as { grantTypes?: readonly string[] }
  return grantTypes?.includes(DEVICE_CODE_GRANT) === true
}
