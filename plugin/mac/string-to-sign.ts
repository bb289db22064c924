// The string a MAC is computed over, and the nonce's minutes: plain string work with no Node
// built-in, so that the browser entry of macgate/client signs exactly as the server verifies.

/**
 * Which query string is signed. `primary` is the contract's (Python and PHP SDKs); the Java SDK
 * signs `form-encoded` values and the documentation leaves out empty values (`without-empty`).
 */
export type QueryVariant = 'primary' | 'form-encoded' | 'without-empty'

type Pair = [name: string, value: string]

// Plain UTF-16 code-unit order, the same as Java's String.compareTo (no locale collation).
function compare (a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function byNameThenValue (a: Pair, b: Pair): number {
  return compare(a[0], b[0]) || compare(a[1], b[1])
}

/** The query as signed: form-decoded pairs sorted by name then value. `rawQuery` has no leading `?`. */
export function canonicalQuery (rawQuery: string, variant: QueryVariant = 'primary'): string {
  if (rawQuery === '') return ''
  // URLSearchParams drops one leading `?`; prefixing one keeps a query that itself starts with `?`
  // (from a URL like `/p??a=1`) intact, so the name stays `?a` as a servlet container would see it.
  const pairs: Pair[] = [...new URLSearchParams(`?${rawQuery}`)]
  pairs.sort(byNameThenValue)
  // URLSearchParams serialises exactly as Java's URLEncoder: `*-._` and alphanumerics kept, space
  // as `+`, everything else as UTF-8 percent-escapes with upper-case hex.
  if (variant === 'form-encoded') return new URLSearchParams(pairs).toString()
  const kept = variant === 'without-empty' ? pairs.filter(([, value]) => value !== '') : pairs
  return kept.map(([name, value]) => `${name}=${value}`).join('&')
}

// The last host signed and its signing form: nearly every request names the same host, and its port
// would otherwise be cut off into a new string each time.
let lastHost = ''
let lastSigningHost = ''

/** The request's host name as signed: lower case, without port; IPv6 literals keep their brackets. */
export function signingHost (host: string): string {
  if (host !== lastHost) {
    lastSigningHost = signingHostOf(host)
    lastHost = host
  }
  return lastSigningHost
}

function signingHostOf (host: string): string {
  const lower = lowerCase(host)
  if (lower.startsWith('[')) {
    const end = lower.indexOf(']')
    return end === -1 ? lower : lower.slice(0, end + 1)
  }
  const colon = lower.indexOf(':')
  // More than one `:` without brackets can only be a bare IPv6 address, which has no port.
  if (colon === -1 || lower.indexOf(':', colon + 1) !== -1) return lower
  return lower.slice(0, colon)
}

// toLowerCase and toUpperCase make a new string even when nothing changes; the method and host
// of nearly every request are already in their case, so they are only converted when they are not.
function lowerCase (text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if ((c >= 0x41 && c <= 0x5a) || c > 0x7e) return text.toLowerCase()
  }
  return text
}

function upperCase (text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if ((c >= 0x61 && c <= 0x7a) || c > 0x7e) return text.toUpperCase()
  }
  return text
}

export interface SigningInput {
  nonce: string
  method: string
  /** The Host header or URL host; port and case are normalised here. */
  host: string
  /** The request path exactly as sent. */
  path: string
  /** Already canonical, see canonicalQuery. */
  query: string
}

// The parts of the string to sign, filled in and joined by each call: one array for every call, not
// one a request (join calls no code of ours, so no call can begin inside another).
const parts = ['', '', '', '', '', '']

/**
 * Each part and a newline after it. Joined, not a template: a template's additions make a string
 * each that the HMAC then flattens (about 100 heap bytes more a request).
 */
export function stringToSign ({ nonce, method, host, path, query }: SigningInput): string {
  parts[0] = nonce
  parts[1] = upperCase(method)
  parts[2] = signingHost(host)
  parts[3] = path
  parts[4] = query
  return parts.join('\n')
}

/** Unix time in whole minutes: a nonce's M is the minute it was made in. */
export function unixMinute (nowMs: number = Date.now()): number {
  return Math.floor(nowMs / 60000)
}
