// Web origins (RFC 6454) as browsers send them in `Origin`: `scheme://host[:port]`, lower case,
// default port left out. What a client registers is kept in that form, so that a lookup is a plain
// string comparison.

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])
/** Longer than any origin a client can register: a longer header is refused without a lookup. */
export const MAX_ORIGIN_LENGTH = 256

/** The origin of an http(s) URL, or undefined when it has none. */
export function originOf (uri: string): string | undefined {
  if (!URL.canParse(uri)) return undefined
  const url = new URL(uri)
  return url.protocol === 'https:' || url.protocol === 'http:' ? url.origin : undefined
}

/**
 * Why a value cannot be registered as an allowed origin, or undefined when it can: an https
 * origin exactly as a browser serialises it (http only for loopback hosts, as for redirect URIs).
 */
export function originProblem (value: string): string | undefined {
  if (value.length > MAX_ORIGIN_LENGTH) return `must be at most ${MAX_ORIGIN_LENGTH} characters`
  const origin = originOf(value)
  if (origin === undefined || origin !== value) return 'must be an origin as a browser sends it: scheme://host[:port], lower case, no path or trailing slash'
  if (origin.startsWith('http:') && !LOOPBACK_HOSTS.has(new URL(origin).hostname)) return 'http is allowed only for loopback hosts'
  return undefined
}

/** Every origin a client may call from: its redirect URIs' origins and its own allowed origins, once each. */
export function clientOrigins (client: { redirectUris: string[], allowedOrigins?: string[] }): string[] {
  const fromRedirects = client.redirectUris.map(originOf).filter((origin): origin is string => origin !== undefined)
  return [...new Set([...fromRedirects, ...client.allowedOrigins ?? []])]
}
