/** An error the authorization server reported (`error` with its contract code, and a description). */
export class TokenEndpointError extends Error {
  readonly errno: number
  readonly description: string

  constructor (errno: number, description: string) {
    super(`authorization server error ${errno}: ${description}`)
    this.name = 'TokenEndpointError'
    this.errno = errno
    this.description = description
  }
}

export interface TokenResponse {
  access_token: string
  expires_in: number
  refresh_token?: string
  scope: string
  token_type: string
  mac_key: string
  mac_algorithm: string
  openId?: string
}

export interface ImplicitGrant {
  access_token: string
  token_type: string
  expires_in: number
  scope: string
  mac_key: string
  mac_algorithm: string
  state?: string
}

// The token endpoint's anti-JSON-hijacking prefix (contract section 4).
const PREFIX = '&&&START&&&'

type Fields = Record<string, unknown>

function malformed (reason: string): Error {
  return new Error(`malformed token response: ${reason}`)
}

// The contract's codes are integers; a server sending something else still gets its text reported.
function serverError (error: unknown, description: unknown): TokenEndpointError {
  const errno = Number(error)
  const text = typeof description === 'string' ? description : String(error)
  return new TokenEndpointError(Number.isInteger(errno) ? errno : 0, text)
}

// scope alone may be empty (a client that asked for no scope); the others must carry a value.
function text (fields: Fields, name: string, allowEmpty = false): string {
  const value = fields[name]
  if (typeof value !== 'string' || (value === '' && !allowEmpty)) throw malformed(`${name} missing`)
  return value
}

function optionalText (fields: Fields, name: string): string | undefined {
  return fields[name] === undefined ? undefined : text(fields, name)
}

// JSON bodies carry a number; a fragment can only carry digits.
function seconds (fields: Fields): number {
  const value = fields.expires_in
  const number = typeof value === 'string' && /^[0-9]{1,15}$/.test(value) ? Number(value) : value
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0) throw malformed('expires_in is not a number of seconds')
  return number
}

// Only MAC tokens with HMAC-SHA1 (or SHA-256, macgate's opt-in) can be used; servers spell the
// algorithm HmacSha1, HmacSHA1, HMACSHA1.
function checkMac (fields: Fields): { token_type: string, mac_algorithm: string } {
  const tokenType = text(fields, 'token_type')
  const algorithm = text(fields, 'mac_algorithm')
  if (tokenType.toLowerCase() !== 'mac') throw malformed(`token_type ${tokenType} is not mac`)
  if (!['hmacsha1', 'hmacsha256'].includes(algorithm.toLowerCase())) throw malformed(`mac_algorithm ${algorithm} is not HmacSha1 or HmacSha256`)
  return { token_type: tokenType, mac_algorithm: algorithm }
}

/** Parses a token endpoint body, with or without the `&&&START&&&` prefix. */
export function parseTokenResponse (body: string): TokenResponse {
  const json = body.startsWith(PREFIX) ? body.slice(PREFIX.length) : body
  let fields: unknown
  try {
    fields = JSON.parse(json)
  } catch {
    throw malformed('not JSON')
  }
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) throw malformed('not a JSON object')
  const f = fields as Fields
  if (f.error !== undefined) throw serverError(f.error, f.error_description)

  const response: TokenResponse = {
    access_token: text(f, 'access_token'),
    expires_in: seconds(f),
    scope: text(f, 'scope', true),
    ...checkMac(f),
    mac_key: text(f, 'mac_key')
  }
  const refreshToken = optionalText(f, 'refresh_token')
  const openId = optionalText(f, 'openId')
  if (refreshToken !== undefined) response.refresh_token = refreshToken
  if (openId !== undefined) response.openId = openId
  return response
}

/** The fragment of a URL (or the fragment itself); undefined query when there is no URL before `#`. */
function split (input: string): { fragment: string, query?: URLSearchParams } {
  const hash = input.indexOf('#')
  if (hash === -1) {
    // No `#`: either a bare fragment, or a URL that came back without one (an error in its query).
    return URL.canParse(input) ? { fragment: '', query: new URL(input).searchParams } : { fragment: input }
  }
  const before = input.slice(0, hash)
  const fragment = input.slice(hash + 1)
  return URL.canParse(before) ? { fragment, query: new URL(before).searchParams } : { fragment }
}

/** Each parameter at most once: a repeated one means someone appended to the redirect. */
function single (params: URLSearchParams): Fields {
  // No prototype: names like `__proto__` or `toString` are plain parameters here.
  const fields: Fields = Object.create(null)
  for (const [name, value] of params) {
    if (name in fields) throw malformed(`${name} given more than once`)
    fields[name] = value
  }
  return fields
}

/**
 * Parses the implicit grant's redirect, `cb#access_token=..&token_type=mac&...`: a full URL or the
 * part after `#`. The contract puts errors in the query string, so a full URL's query is checked too.
 */
export function parseImplicitFragment (urlOrFragment: string): ImplicitGrant {
  const { fragment, query } = split(urlOrFragment)
  const fields = single(new URLSearchParams(fragment))
  // The contract redirects errors with `error` in the query and no fragment; accept either place.
  if (fields.error !== undefined) throw serverError(fields.error, fields.error_description)
  if (fragment === '' && query?.has('error') === true) throw serverError(query.get('error'), query.get('error_description'))

  const grant: ImplicitGrant = {
    access_token: text(fields, 'access_token'),
    ...checkMac(fields),
    expires_in: seconds(fields),
    scope: text(fields, 'scope', true),
    mac_key: text(fields, 'mac_key')
  }
  const state = optionalText(fields, 'state')
  if (state !== undefined) grant.state = state
  return grant
}
