// redirect_uri rules (contract section 2): scheme, host and port compared normalised, the path
// byte for byte as sent, the query ("extra data") free unless strict matching is asked for.

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])
// Only visible ASCII can go back into a Location header as sent; no backslash, which URL parsers
// and browsers read as '/', so that the raw path compared would not be the path followed.
const SENDABLE = /^[\x21-\x5b\x5d-\x7e]+$/

/** The path exactly as written, which `URL` would normalise (dot segments, encoding). */
function rawPath (uri: string): string {
  const afterScheme = uri.slice(uri.indexOf('//') + 2)
  const start = afterScheme.search(/[/?#]/)
  if (start === -1 || afterScheme[start] !== '/') return '/'
  const rest = afterScheme.slice(start)
  const end = rest.search(/[?#]/)
  return end === -1 ? rest : rest.slice(0, end)
}

function parse (uri: string): URL | undefined {
  if (!SENDABLE.test(uri) || !/^https?:\/\//i.test(uri)) return undefined
  try {
    return new URL(uri)
  } catch {
    return undefined
  }
}

// Response parameters the server adds; one already in the URI would appear twice (RFC 6749 §3.1).
const RESPONSE_PARAMETERS = ['code', 'state', 'error', 'error_description']

function presetsResponse (url: URL): boolean {
  return RESPONSE_PARAMETERS.some((name) => url.searchParams.has(name))
}

/** Why a URI cannot be registered as a redirect URI, or undefined when it can. */
export function registrationProblem (uri: string): string | undefined {
  const url = parse(uri)
  if (url === undefined) return 'must be an absolute http(s) URI'
  if (uri.includes('#')) return 'must not have a fragment'
  if (url.username !== '' || url.password !== '') return 'must not carry credentials'
  if (presetsResponse(url)) return `must not carry the response parameters ${RESPONSE_PARAMETERS.join(', ')}`
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) return 'http is allowed only for loopback hosts'
  return undefined
}

/** The registered URI that `given` matches, or undefined. */
export function matchRedirectUri (registered: string[], given: string, strict = false): string | undefined {
  if (strict) return registered.find((uri) => uri === given)
  const url = parse(given)
  if (url === undefined || given.includes('#') || url.username !== '' || url.password !== '' || presetsResponse(url)) return undefined
  const path = rawPath(given)
  return registered.find((uri) => {
    const candidate = parse(uri)
    return candidate !== undefined && candidate.protocol === url.protocol &&
      candidate.host === url.host && rawPath(uri) === path
  })
}

/** The request's own redirect URI with parameters added to its query. */
export function withQuery (uri: string, params: Record<string, string>): string {
  const separator = !uri.includes('?') ? '?' : uri.endsWith('?') || uri.endsWith('&') ? '' : '&'
  return uri + separator + new URLSearchParams(params).toString()
}

/** The request's own redirect URI with parameters in its fragment (implicit grant). */
export function withFragment (uri: string, params: Record<string, string>): string {
  return `${uri}#${new URLSearchParams(params).toString()}`
}
