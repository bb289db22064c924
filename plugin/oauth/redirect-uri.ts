// redirect_uri rules (contract section 2): scheme, host and port compared normalised, the path
// byte for byte as sent, the query ("extra data") free unless strict matching is asked for.
// Native apps (RFC 8252, contract §12): a registered URI on a loopback IP literal matches any port
// (§7.3), and a public client may register a private-use scheme (§7.1, `com.example.app:/cb`).

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])
// Only visible ASCII can go back into a Location header as sent; no backslash, which URL parsers
// and browsers read as '/', so that the raw path compared would not be the path followed.
const SENDABLE = /^[\x21-\x5b\x5d-\x7e]+$/

/** Loopback IP literals (RFC 8252 §7.3): the port may differ from the registered one. `localhost` keeps its port (§8.3). */
const LOOPBACK_IPS = new Set(['127.0.0.1', '[::1]'])

/**
 * A private-use scheme (RFC 8252 §7.1): a reverse domain name with at least one dot, then `:/` and
 * a path (never `//`: it has no authority). Its first label must not be a scheme of the web's own
 * (`https.example.app:` would pass for https in a glance).
 */
const PRIVATE_USE = /^([a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+):\/(?!\/)/i
const LOOK_ALIKES = new Set(['http', 'https', 'javascript', 'data', 'file', 'blob', 'about', 'ftp', 'ws', 'wss', 'mailto', 'vbscript', 'intent', 'content', 'chrome'])

/** The scheme of a private-use URI (lower case), or undefined when `uri` is not one. */
function privateUseScheme (uri: string): string | undefined {
  const scheme = PRIVATE_USE.exec(uri)?.[1]?.toLowerCase()
  if (scheme === undefined || LOOK_ALIKES.has(scheme.split('.')[0]!)) return undefined
  return scheme
}

/** The path exactly as written, which `URL` would normalise (dot segments, encoding). */
function rawPath (uri: string): string {
  const scheme = privateUseScheme(uri)
  if (scheme !== undefined) {
    const rest = uri.slice(scheme.length + 1)
    const end = rest.search(/[?#]/)
    return end === -1 ? rest : rest.slice(0, end)
  }
  const afterScheme = uri.slice(uri.indexOf('//') + 2)
  const start = afterScheme.search(/[/?#]/)
  if (start === -1 || afterScheme[start] !== '/') return '/'
  const rest = afterScheme.slice(start)
  const end = rest.search(/[?#]/)
  return end === -1 ? rest : rest.slice(0, end)
}

function parse (uri: string): URL | undefined {
  if (!SENDABLE.test(uri) || (!/^https?:\/\//i.test(uri) && privateUseScheme(uri) === undefined)) return undefined
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

/**
 * Why a URI cannot be registered as a redirect URI, or undefined when it can. A private-use
 * scheme only for a public client (`privateUse`): a native app, which has no secret anyway.
 */
export function registrationProblem (uri: string, { privateUse = false } = {}): string | undefined {
  const url = parse(uri)
  if (url === undefined) return privateUse ? 'must be an absolute http(s) URI or a private-use scheme URI (com.example.app:/path)' : 'must be an absolute http(s) URI'
  if (!privateUse && privateUseScheme(uri) !== undefined) return 'may use a private-use scheme only for a public client (a native app)'
  if (uri.includes('#')) return 'must not have a fragment'
  if (url.username !== '' || url.password !== '') return 'must not carry credentials'
  if (presetsResponse(url)) return `must not carry the response parameters ${RESPONSE_PARAMETERS.join(', ')}`
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) return 'http is allowed only for loopback hosts'
  return undefined
}

/** Whether `url` is on the loopback IP literal `registered` is on, on whatever port (RFC 8252 §7.3). */
function sameLoopbackIp (registered: URL, url: URL): boolean {
  return registered.protocol === 'http:' && LOOPBACK_IPS.has(registered.hostname) && registered.hostname === url.hostname
}

/** The registered URI on the port `given` came on: what a code is bound to, so its redemption names the same port. */
function onPortOf (registered: string, given: URL): string {
  const afterAuthority = registered.slice(registered.indexOf('//') + 2).search(/[/?#]|$/) + registered.indexOf('//') + 2
  return `${given.protocol}//${given.host}${registered.slice(afterAuthority)}`
}

/**
 * The registered URI that `given` matches, or undefined. One on a loopback IP literal matches on
 * any port, and is answered on the port given (so that the token request must repeat that port).
 */
export function matchRedirectUri (registered: string[], given: string, strict = false): string | undefined {
  const url = parse(given)
  if (strict) {
    const exact = registered.find((uri) => uri === given)
    if (exact !== undefined || url === undefined) return exact
    const loopback = registered.find((uri) => { const candidate = parse(uri); return candidate !== undefined && sameLoopbackIp(candidate, url) && onPortOf(uri, url) === given })
    return loopback === undefined ? undefined : given
  }
  if (url === undefined || given.includes('#') || url.username !== '' || url.password !== '' || presetsResponse(url)) return undefined
  const path = rawPath(given)
  for (const uri of registered) {
    const candidate = parse(uri)
    if (candidate === undefined || candidate.protocol !== url.protocol || rawPath(uri) !== path) continue
    if (candidate.host === url.host) return uri
    if (sameLoopbackIp(candidate, url)) return onPortOf(uri, url)
  }
  return undefined
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
