import { errors } from '../../core/errors.js'
import type { MacgateContext } from '../../config/options.js'
import type { ClientRecord } from '../../store/store.js'
import { single, type Params } from '../../core/params.js'
import { matchRedirectUri } from '../redirect-uri.js'

/** The registered URI the token request's redirect_uri matches, by the authorize rule (96010). */
export function checkRedirectUri (config: MacgateContext, client: ClientRecord, params: Params): string {
  const given = single(params, 'redirect_uri')
  const registered = given === undefined ? undefined : matchRedirectUri(client.redirectUris, given, config.strictRedirectUri)
  if (registered === undefined) throw errors.invalidRedirectUri()
  return registered
}
