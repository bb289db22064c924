import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { nonceMinutes } from './string-to-sign.js'

// The signing string's parts live apart from node:crypto, for the browser entry of macgate/client.
export { canonicalQuery, nonceMinutes, signingHost, stringToSign, type QueryVariant, type SigningInput } from './string-to-sign.js'

/** The token's mac_algorithm as node:crypto names it; anything but HmacSha256 is the spec's HmacSha1. */
export function hmacOf (macAlgorithm: string | undefined): 'sha1' | 'sha256' {
  return macAlgorithm?.toLowerCase() === 'hmacsha256' ? 'sha256' : 'sha1'
}

/** base64(HMAC-SHA1(utf8(macKey), utf8(text))), or HMAC-SHA256 for a client registered with it. */
export function computeMac (macKey: string, text: string, hmac: 'sha1' | 'sha256' = 'sha1'): string {
  return createHmac(hmac, Buffer.from(macKey, 'utf8')).update(text, 'utf8').digest('base64')
}

/** Constant-time comparison. Only the length can leak, and a mac's length is public anyway. */
export function macMatches (expected: string, given: string): boolean {
  const a = Buffer.from(expected, 'utf8')
  const b = Buffer.from(given, 'utf8')
  return a.length === b.length && timingSafeEqual(a, b)
}

/** A fresh nonce `R:M`, R a random signed 64-bit integer as the SDKs send it. */
export function makeNonce (nowMs: number = Date.now()): string {
  return `${randomBytes(8).readBigInt64BE(0)}:${nonceMinutes(nowMs)}`
}
