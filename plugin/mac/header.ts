import { errors, type OAuthError } from '../http/errors.ts'

/** The parts of `Authorization: MAC access_token="T", nonce="R:M", mac="X"`, percent-decoded. */
export interface MacHeader {
  accessToken: string
  nonce: string
  mac: string
  /** The nonce's M: Unix time in whole minutes. (Its R, 1-64 characters without `:` or whitespace, is checked, never used alone.) */
  minutes: number
}

// 4 KiB is far above any real header (token ~60, nonce ~30, mac 28 characters) and bounds the work.
export const MAX_HEADER_LENGTH = 4096

type Name = 'access_token' | 'nonce' | 'mac'
const NAMES: readonly Name[] = ['access_token', 'nonce', 'mac']

// R: 1-64 characters, no `:` and no whitespace. M: digits only; 12 digits is ~1.9 million years.
const MAX_RANDOM = 64
const MAX_MINUTE_DIGITS = 12

const SPACE = 0x20
const TAB = 0x09
const COMMA = 0x2c
const EQUALS = 0x3d
const QUOTE = 0x22
const COLON = 0x3a
const ZERO = 0x30
const NINE = 0x39

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

/** Which parameter the name at [start, end) is, read in place (no string made per name); -1 for none. */
function nameAt (value: string, start: number, end: number): number {
  for (let n = 0; n < NAMES.length; n++) {
    const name = NAMES[n]!
    if (name.length === end - start && value.startsWith(name, start)) return n
  }
  return -1
}

// Whitespace as RegExp's \s sees it, for R: any of these makes a nonce invalid.
const WHITESPACE = /\s/

/** R's rules, read in place: 1-64 characters, none of them `:` or whitespace. */
function isRandom (nonce: string, end: number): boolean {
  if (end < 1 || end > MAX_RANDOM) return false
  for (let i = 0; i < end; i++) {
    const c = nonce.charCodeAt(i)
    if (c === COLON) return false
    // ASCII whitespace (tab to carriage return, space) by code; beyond ASCII, Unicode's spaces by RegExp.
    if (c === SPACE || (c >= TAB && c <= 0x0d) || (c > 0x7e && WHITESPACE.test(nonce[i]!))) return false
  }
  return true
}

/** M's digits from `start` to the end as a number, or -1 when they are not 1-12 ASCII digits. */
function minutesFrom (nonce: string, start: number): number {
  const digits = nonce.length - start
  if (digits < 1 || digits > MAX_MINUTE_DIGITS) return -1
  let minutes = 0
  for (let i = start; i < nonce.length; i++) {
    const c = nonce.charCodeAt(i)
    if (c < ZERO || c > NINE) return -1
    minutes = minutes * 10 + (c - ZERO)
  }
  return minutes
}

/** A hex digit's value, or -1. */
function hexValue (c: number): number {
  if (c >= ZERO && c <= NINE) return c - ZERO
  const lower = c | 0x20
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1
}

/** Where an escaped value is decoded: no value is longer than the header it is in. */
const DECODED = Buffer.allocUnsafe(MAX_HEADER_LENGTH)
const PERCENT = 0x25

/**
 * `raw` as decodeURIComponent decodes it, which leaves `+` alone (SDKs send base64 macs with a raw
 * `+`) and throws on a bad `%`. The SDKs escape every nonce's `:` and most macs' `=`, `+` or `/`:
 * a value of ASCII with escapes of ASCII is decoded here, byte by byte into a buffer, read back as
 * one string (decodeURIComponent, a call into the runtime, takes twice the time); any other,
 * well formed or not, is decodeURIComponent's.
 */
function percentDecode (name: string, raw: string): string {
  if (!raw.includes('%')) return raw
  let length = 0
  for (let i = 0; i < raw.length; i++) {
    let c = raw.charCodeAt(i)
    if (c === PERCENT) {
      const high = hexValue(raw.charCodeAt(i + 1))
      const low = hexValue(raw.charCodeAt(i + 2))
      // Not an ASCII byte's escape (or not an escape at all): UTF-8 to decode, or an error to throw.
      if (high < 0 || high > 7 || low < 0) return decodedByRuntime(name, raw)
      c = high * 16 + low
      i += 2
    } else if (c > 0x7f) {
      return decodedByRuntime(name, raw)
    }
    DECODED[length++] = c
  }
  return DECODED.toString('latin1', 0, length)
}

function decodedByRuntime (name: string, raw: string): string {
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
  const afterScheme = value.charCodeAt(i + 3)
  // `MAC` in any case, read in place: | 0x20 lower-cases an ASCII letter (and nothing else maps to m, a, c).
  if ((value.charCodeAt(i) | 0x20) !== 0x6d || (value.charCodeAt(i + 1) | 0x20) !== 0x61 || (value.charCodeAt(i + 2) | 0x20) !== 0x63 ||
    (afterScheme !== SPACE && afterScheme !== TAB)) {
    throw invalid('scheme is not MAC')
  }
  i += 3

  // Each parameter's value once found; three variables, not an array, on every request.
  let accessToken: string | undefined
  let nonce: string | undefined
  let mac: string | undefined
  for (;;) {
    i = skipSpace(value, i)
    if (i === value.length) break // end, possibly after a trailing comma

    const nameStart = i
    while (i < value.length && isNameChar(value.charCodeAt(i))) i++
    if (i === nameStart) throw invalid(`unexpected character at position ${i}`)
    const known = nameAt(value, nameStart, i)
    // Unknown parameters are refused rather than ignored: a client sending `ts` or `ext` (older MAC
    // drafts) or a misspelt name believes something is signed or checked that is not.
    if (known === -1) throw invalid(`unknown parameter ${value.slice(nameStart, Math.min(i, nameStart + 32))}`)
    const name = NAMES[known]!
    if ((known === 0 ? accessToken : known === 1 ? nonce : mac) !== undefined) throw invalid(`${name} given more than once`)

    i = skipSpace(value, i)
    if (value.charCodeAt(i) !== EQUALS) throw invalid(`expected = after ${name}`)
    i = skipSpace(value, i + 1)
    if (value.charCodeAt(i) !== QUOTE) throw invalid(`${name} value must be in double quotes`)
    const close = value.indexOf('"', i + 1)
    if (close === -1) throw invalid(`${name} value has no closing quote`)
    const decoded = percentDecode(name, value.slice(i + 1, close))
    if (known === 0) accessToken = decoded
    else if (known === 1) nonce = decoded
    else mac = decoded

    i = skipSpace(value, close + 1)
    if (i === value.length) break
    if (value.charCodeAt(i) !== COMMA) throw invalid(`expected , after ${name}`)
    i++
  }

  if (accessToken === undefined || nonce === undefined || mac === undefined) {
    const found = [accessToken, nonce, mac]
    throw invalid(`missing ${NAMES.filter((_name, n) => found[n] === undefined).join(', ')}`)
  }
  if (accessToken === '') throw invalid('access_token is empty')
  if (mac === '') throw invalid('mac is empty')

  // Exactly one `:` follows from the rules: R has none and M is digits only.
  const colon = nonce.indexOf(':')
  if (colon === -1 || !isRandom(nonce, colon)) {
    throw invalid('nonce must be R:M with R 1-64 characters without : or whitespace')
  }
  const minutes = minutesFrom(nonce, colon + 1)
  if (minutes === -1) throw invalid('nonce minutes must be a non-negative integer of at most 12 digits')

  return { accessToken, nonce, mac, minutes }
}
