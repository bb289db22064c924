import { errors } from '../../http/errors.ts'
import type { MacgateContext } from '../../config/options.ts'
import type { ClientRecord } from '../../store/store.ts'
import { single, type Params } from '../../http/params.ts'
import { matchRedirectUri } from '../redirect-uri.ts'

/** The registered URI the token request's redirect_uri matches, by the authorize rule (96010). */
export function checkRedirectUri (config: MacgateContext, client: ClientRecord, params: Params): string {
  const given = single(params, 'redirect_uri')
  const registered = given === undefined ? undefined : matchRedirectUri(client.redirectUris, given, config.strictRedirectUri)
  if (registered === undefined) throw errors.invalidRedirectUri()
  return registered
}
