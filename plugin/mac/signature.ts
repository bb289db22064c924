import { createHmac, randomBytes } from 'node:crypto'
import { HmacKey, type HmacHash } from '../access/hmac-key.ts'
import { unixMinute } from './string-to-sign.ts'

// The signing string's parts live apart from node:crypto, for the browser entry of macgate/client.
export { canonicalQuery, unixMinute, signingHost, stringToSign, type QueryVariant, type SigningInput } from './string-to-sign.ts'

/** The token's mac_algorithm as node:crypto names it; anything but HmacSha256 is the spec's HmacSha1. */
export function hashNameOf (macAlgorithm: string | undefined): HmacHash {
  return macAlgorithm?.toLowerCase() === 'hmacsha256' ? 'sha256' : 'sha1'
}

/** The mac_key (its text, or its UTF-8 bytes) as an HMAC key under the token's hash, made once per cached token (token-cache.ts), not per request. */
export function signingKeyOf (macKey: string | Buffer, hash: HmacHash = 'sha1'): HmacKey {
  return new HmacKey(hash, macKey)
}

/**
 * base64(HMAC-SHA1(utf8(macKey), utf8(text))), or HMAC-SHA256 for a client registered with it: a
 * client signing with the token's text. (The verifier signs with the key prepared once per cached
 * token, `signingKeyOf(macKey, hash).digest(text, 'base64')`: the same mac.)
 */
export function computeMac (macKey: string, text: string, hash: HmacHash = 'sha1'): string {
  return createHmac(hash, Buffer.from(macKey, 'utf8')).update(text, 'utf8').digest('base64')
}

/** A fresh nonce `R:M`, R a random signed 64-bit integer as the SDKs send it. */
export function makeNonce (nowMs: number = Date.now()): string {
  return `${randomBytes(8).readBigInt64BE(0)}:${unixMinute(nowMs)}`
}
