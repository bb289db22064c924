import type { MacgateContext } from '../../config/options.ts'
import { DEVICE_AUTHORIZATION_PATH } from './authorization-endpoint.ts'
import { DEVICE_CODE_GRANT } from '../../access/grant-types.ts'

/**
 * What RFC 8414 metadata says of the device grant: its endpoint, only when the deployment has an
 * issuer (the user types the verification URI, so it must be the public one).
 */
export function deviceMetadata (config: MacgateContext, issuer: string): { device_authorization_endpoint?: string } {
  return config.issuer === undefined ? {} : { device_authorization_endpoint: `${issuer}${DEVICE_AUTHORIZATION_PATH}` }
}

/** The grant's URN in `grant_types_supported`, on the same condition. */
export function deviceGrantTypes (config: MacgateContext): string[] {
  return config.issuer === undefined ? [] : [DEVICE_CODE_GRANT]
}
