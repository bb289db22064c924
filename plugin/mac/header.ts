import { errors, type OAuthError } from '../core/errors.ts'

/** The parts of `Authorization: MAC access_token="T", nonce="R:M", mac="X"`, percent-decoded. */
export interface MacHeader {
  accessToken: string
  nonce: string
  mac: string
  /** The nonce's random part R (any 1-64 characters without `:` or whitespace; SDKs send a signed integer). */
  random: string
  /** The nonce's M: Unix time in whole minutes. */
  minutes: number
}

// 4 KiB is far above any real header (token ~60, nonce ~30, mac 28 characters) and bounds the work.
export const MAX_HEADER_LENGTH = 4096

type Name = 'access_token' | 'nonce' | 'mac'
const NAMES: ReadonlySet<string> = new Set<Name>(['access_token', 'nonce', 'mac'])

// R: 1-64 characters, no `:` and no whitespace. M: digits only; 12 digits is ~1.9 million years.
// Both patterns are a single character class under a bounded quantifier: no backtracking blow-up.
const RANDOM = /^[^\s:]{1,64}$/
const MINUTES = /^[0-9]{1,12}$/

const SPACE = 0x20
const TAB = 0x09
const COMMA = 0x2c
const EQUALS = 0x3d
const QUOTE = 0x22

function invalid (reason: string): OAuthError {
  return errors.invalidAuthorization(`invalid MAC Authorization header: ${reason}`)
}

function skipSpace (text: string, i: number): number {
  let c = text.charCodeAt(i)
  while (c === SPACE || c === TAB) c = text.charCodeAt(++i)
  return i
}

// Parameter names are plain ASCII words; anything else is a syntax error, not an unknown name.
function isNameChar (c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2d
}

// decodeURIComponent leaves `+` alone (SDKs send base64 macs with a raw `+`) and throws on bad `%`.
function percentDecode (name: string, raw: string): string {
  if (!raw.includes('%')) return raw
  try {
    return decodeURIComponent(raw)
  } catch {
    throw invalid(`bad percent-encoding in ${name}`)
  }
}

/**
 * Parses the value of an `Authorization: MAC ...` header. One left-to-right pass, no regex over the
 * whole header: it runs on every gateway request. Throws invalidAuthorization (96002, HTTP 401) on any deviation.
 */
export function parseMacHeader (value: string): MacHeader {
  if (value.length > MAX_HEADER_LENGTH) throw invalid(`longer than ${MAX_HEADER_LENGTH} characters`)

  // HTTP does not count leading whitespace as part of a field value.
  let i = skipSpace(value, 0)
  const scheme = value.slice(i, i + 3)
  const afterScheme = value.charCodeAt(i + 3)
  if (scheme.toLowerCase() !== 'mac' || (afterScheme !== SPACE && afterScheme !== TAB)) {
    throw invalid('scheme is not MAC')
  }
  i += 3

  const found: Partial<Record<Name, string>> = {}
  for (;;) {
    i = skipSpace(value, i)
    if (i === value.length) break // end, possibly after a trailing comma

    const nameStart = i
    while (i < value.length && isNameChar(value.charCodeAt(i))) i++
    if (i === nameStart) throw invalid(`unexpected character at position ${i}`)
    const name = value.slice(nameStart, i)
    // Unknown parameters are refused rather than ignored: a client sending `ts` or `ext` (older MAC
    // drafts) or a misspelt name believes something is signed or checked that is not.
    if (!NAMES.has(name)) throw invalid(`unknown parameter ${name.slice(0, 32)}`)
    if (found[name as Name] !== undefined) throw invalid(`${name} given more than once`)

    i = skipSpace(value, i)
    if (value.charCodeAt(i) !== EQUALS) throw invalid(`expected = after ${name}`)
    i = skipSpace(value, i + 1)
    if (value.charCodeAt(i) !== QUOTE) throw invalid(`${name} value must be in double quotes`)
    const close = value.indexOf('"', i + 1)
    if (close === -1) throw invalid(`${name} value has no closing quote`)
    found[name as Name] = percentDecode(name, value.slice(i + 1, close))

    i = skipSpace(value, close + 1)
    if (i === value.length) break
    if (value.charCodeAt(i) !== COMMA) throw invalid(`expected , after ${name}`)
    i++
  }

  const { access_token: accessToken, nonce, mac } = found
  if (accessToken === undefined || nonce === undefined || mac === undefined) {
    const missing = [...NAMES].filter((name) => found[name as Name] === undefined)
    throw invalid(`missing ${missing.join(', ')}`)
  }
  if (accessToken === '') throw invalid('access_token is empty')
  if (mac === '') throw invalid('mac is empty')

  // Exactly one `:` follows from the rules: R has none and M is digits only.
  const colon = nonce.indexOf(':')
  const random = nonce.slice(0, colon)
  const minutes = nonce.slice(colon + 1)
  if (colon === -1 || !RANDOM.test(random)) {
    throw invalid('nonce must be R:M with R 1-64 characters without : or whitespace')
  }
  if (!MINUTES.test(minutes)) throw invalid('nonce minutes must be a non-negative integer of at most 12 digits')

  return { accessToken, nonce, mac, random, minutes: Number(minutes) }
}
