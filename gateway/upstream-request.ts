// What goes upstream of a verified request, and what never does (contract §6; RFC 9110 §7.6.1).
import type { IncomingHttpHeaders } from 'node:http'
import type { MacIdentity } from '../plugin/index.js'

/** Meaningful for one connection only: never forwarded (RFC 9110 §7.6.1), with those Connection names. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authorization', 'proxy-authenticate']

/** Where the request came from, as a proxy in front would say it: only the gateway says it here. */
const FORWARDING = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port', 'x-real-ip', 'x-client-ip']

/** Headers that ask an upstream to act on another method than the one the route check judged. */
export const METHOD_OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override']

/** A header a CGI or WSGI upstream would read as one of ours: `_` and `-` alike, any case. */
function claimsIdentity (name: string): boolean {
  return name.startsWith('x-macgate') || (name.includes('_') && name.replaceAll('_', '-').startsWith('x-macgate-'))
}

export interface UpstreamHeaderOptions {
  /** Forward X-HTTP-Method-Override and its kin (off: the route check judged the request's own method). */
  forwardMethodOverride: boolean
}

/**
 * The request's headers as the upstream gets them: without the caller's credentials, hop-by-hop
 * headers, `Expect` (answered here: Node sends the 100 Continue), any identity or origin the caller
 * claimed itself and (by default) method overrides; with the verified identity and the caller's
 * address as X-Forwarded-For. Node has already lower-cased every name.
 */
export function upstreamHeaders (identity: MacIdentity, clientAddress: string, headers: IncomingHttpHeaders, { forwardMethodOverride }: UpstreamHeaderOptions): IncomingHttpHeaders {
  const listed = headers.connection
  if (listed !== undefined) for (const name of listed.split(',')) delete headers[name.trim().toLowerCase()]
  for (const name of HOP_BY_HOP) delete headers[name]
  delete headers.expect
  delete headers.authorization
  for (const name of FORWARDING) delete headers[name]
  headers['x-forwarded-for'] = clientAddress
  if (!forwardMethodOverride) for (const name of METHOD_OVERRIDE_HEADERS) delete headers[name]
  for (const name of Object.keys(headers)) if (claimsIdentity(name)) delete headers[name]
  headers['x-macgate-open-id'] = identity.openId
  headers['x-macgate-client-id'] = identity.clientId
  headers['x-macgate-user-id'] = identity.userId
  headers['x-macgate-scope'] = identity.scope.join(' ')
  return headers
}

/** A query pair's name as URLSearchParams decodes it: the decoder the verifier's binding check uses. */
function nameOf (pair: string): string {
  return new URLSearchParams(pair).keys().next().value ?? ''
}

/**
 * The query sent upstream: as the caller sent it, less any `token` parameter however its name is
 * encoded (SDKs may put the access token there too). The other pairs keep their exact encoding.
 */
export function upstreamQuery (search: string | undefined, requestUrl: string): string {
  const start = requestUrl.indexOf('?')
  const query = search !== undefined && search !== '' ? search.replace(/^\?/, '') : start === -1 ? '' : requestUrl.slice(start + 1)
  if (!query.includes('token') && !query.includes('%')) return query
  return query.split('&').filter((pair) => nameOf(pair) !== 'token').join('&')
}
