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

// What never goes upstream, as one set: the filter below is one pass over the request's headers.
const DROPPED = new Set([...HOP_BY_HOP, 'expect', 'authorization', ...FORWARDING])
const DROPPED_AND_OVERRIDES = new Set([...DROPPED, ...METHOD_OVERRIDE_HEADERS])

/** Whether a request header of this (lower-case) name can reach the upstream at all: what a preflight may grant. */
export function isForwarded (name: string, { forwardMethodOverride }: UpstreamHeaderOptions): boolean {
  return !(forwardMethodOverride ? DROPPED : DROPPED_AND_OVERRIDES).has(name) && !claimsIdentity(name)
}

/** The identity's scope as a header value, made once per identity (a cached token shares one). */
const scopeValues = new WeakMap<MacIdentity, string>()
function scopeValue (identity: MacIdentity): string {
  let value = scopeValues.get(identity)
  if (value === undefined) scopeValues.set(identity, value = identity.scope.join(' '))
  return value
}

/**
 * The request's headers as the upstream gets them: without the caller's credentials, hop-by-hop
 * headers and those its Connection names, `Expect` (answered here: Node sends the 100 Continue),
 * any identity or origin the caller claimed itself and (by default) method overrides; with the
 * verified identity and the caller's address as X-Forwarded-For. Node has already lower-cased
 * every name. A new object: copying what stays is cheaper than deleting what goes.
 */
export function upstreamHeaders (identity: MacIdentity, clientAddress: string, headers: IncomingHttpHeaders, { forwardMethodOverride }: UpstreamHeaderOptions): IncomingHttpHeaders {
  const dropped = forwardMethodOverride ? DROPPED : DROPPED_AND_OVERRIDES
  const listed = headers.connection?.split(',').map((name) => name.trim().toLowerCase())
  const kept: IncomingHttpHeaders = {}
  for (const name in headers) {
    if (dropped.has(name) || claimsIdentity(name) || listed?.includes(name) === true) continue
    kept[name] = headers[name]
  }
  kept['x-forwarded-for'] = clientAddress
  kept['x-macgate-open-id'] = identity.openId
  kept['x-macgate-client-id'] = identity.clientId
  kept['x-macgate-user-id'] = identity.userId
  kept['x-macgate-scope'] = scopeValue(identity)
  return kept
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
