// What goes upstream of a verified request, and what never does (contract §6; RFC 9110 §7.6.1).
import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyRequest } from 'fastify'
import { pathAndQuery, type MacIdentity } from '../../plugin/index.ts'

/**
 * Meaningful for one connection only: never forwarded (RFC 9110 §7.6.1). Connection itself and the
 * names it lists are already gone when `upstreamHeaders` runs (reply-from deletes them first), so
 * `connection` is here only for `isForwarded`, the preflight's answer.
 */
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

/**
 * The upstream's headers, an instance of a class of no fields rather than `{}`: `{}` has room for
 * four properties in itself, and a signed GET's upstream headers are nine with the proxy's two
 * keys (proxy.ts), so the rest went to a store of their own, made and then grown and copied, 64
 * heap bytes a request. V8 gives a class's first instances room to spare, then sizes every later
 * one for the properties the first ones took (its slack tracking): all of them, in the object.
 */
class UpstreamHeaderSet implements IncomingHttpHeaders {
  [name: string]: string | string[] | undefined
}

/**
 * The identity's scope as a header value, made once per scope array: the token cache gives every
 * token of the same scopes one shared array (plugin/mac/scope-sets.ts), so these are a few.
 */
const scopeValues = new WeakMap<readonly string[], string>()
function scopeValue ({ scope }: MacIdentity): string {
  let value = scopeValues.get(scope)
  if (value === undefined) scopeValues.set(scope, value = scope.join(' '))
  return value
}

/**
 * The request's headers as the upstream gets them: without the caller's credentials, hop-by-hop
 * headers, `Expect` (answered here: Node sends the 100 Continue), any identity or origin the
 * caller claimed itself and (by default) method overrides; with the verified identity, the
 * caller's address as X-Forwarded-For (behind trusted proxies, the caller and the hops after it:
 * trusted-proxies.ts) and, behind trusted proxies, X-Forwarded-Proto; without Host, which undici
 * writes as each instance's own. `headers` is reply-from's copy of the request's: it has already
 * taken out Connection and the headers it names (reply-from's index.js, before its
 * rewriteRequestHeaders calls this; test/gateway/open-api/gateway-edges.test.ts checks it over real
 * HTTP), so nothing here parses Connection. Node has already lower-cased every name.
 *
 * The answer is a new object (`UpstreamHeaderSet`), never that copy changed: reply-from's copy is
 * a spread (`{ ...req.headers }`), and V8 gives each property added to a spread's result a map of
 * its own, every request again (about 350 heap bytes a header), where a new object takes the same
 * cached shapes each time.
 */
export function upstreamHeaders (identity: MacIdentity, forwardedFor: string, headers: IncomingHttpHeaders, { forwardMethodOverride }: UpstreamHeaderOptions, forwardedProto?: string): IncomingHttpHeaders {
  const dropped = forwardMethodOverride ? DROPPED : DROPPED_AND_OVERRIDES
  const upstream: IncomingHttpHeaders = new UpstreamHeaderSet()
  for (const name in headers) {
    if (name !== 'host' && !dropped.has(name) && !claimsIdentity(name)) upstream[name] = headers[name]
  }
  upstream['x-forwarded-for'] = forwardedFor
  if (forwardedProto !== undefined) upstream['x-forwarded-proto'] = forwardedProto
  upstream['x-macgate-open-id'] = identity.openId
  upstream['x-macgate-client-id'] = identity.clientId
  upstream['x-macgate-user-id'] = identity.userId
  upstream['x-macgate-scope'] = scopeValue(identity)
  return upstream
}

/** A query pair's name as URLSearchParams decodes it: the decoder the verifier's binding check uses. */
function nameOf (pair: string): string {
  return new URLSearchParams(pair).keys().next().value ?? ''
}

/**
 * The query sent upstream: as the caller sent it, less any `token` parameter however its name is
 * encoded (SDKs may put the access token there too). The other pairs keep their exact encoding.
 * reply-from's own arguments (the destination's search, the URL) are not read: the proxy's route
 * gives reply-from no destination, so it takes the request's path without its query, and the
 * request's one split has the query as sent.
 */
export function upstreamQuery (_search: string | undefined, _url: string, request: Pick<FastifyRequest, 'url' | 'pathAndQuery'>): string {
  const { query } = pathAndQuery(request)
  if (!query.includes('token') && !query.includes('%')) return query
  return query.split('&').filter((pair) => nameOf(pair) !== 'token').join('&')
}
