// Signing on Web Crypto, for browsers and for Node alike (Node 20 has globalThis.crypto): the same
// header as sign.ts, computed asynchronously because crypto.subtle is.
import { base64 } from './base64.ts'
import { unixMinute } from '../mac/string-to-sign.ts'
import { explainSignature, macHeader, type SignedFetch, type SignedFetchOptions, type SignRequestOptions } from './request-signature.ts'

// The token's mac_algorithm as Web Crypto names the hash; anything but HmacSha256 is the spec's HmacSha1.
function hashOf (macAlgorithm: string | undefined): 'SHA-1' | 'SHA-256' {
  return macAlgorithm?.toLowerCase() === 'hmacsha256' ? 'SHA-256' : 'SHA-1'
}

/**
 * The HMAC key for a mac_key: its UTF-8 bytes (contract section 1). Web Crypto refuses an empty key
 * where node:crypto would sign with it; a token response never carries one, so say so plainly.
 */
async function importMacKey (macKey: string, macAlgorithm?: string): Promise<CryptoKey> {
  if (macKey === '') throw new TypeError('macKey is empty')
  return await crypto.subtle.importKey('raw', new TextEncoder().encode(macKey), { name: 'HMAC', hash: hashOf(macAlgorithm) }, false, ['sign'])
}

async function hmac (key: CryptoKey, text: string): Promise<string> {
  return base64(new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(text))))
}

/** base64(HMAC-SHA1(utf8(macKey), utf8(text))), or SHA-256 for HmacSha256: computeMac on Web Crypto. */
export async function computeMacAsync (macKey: string, text: string, macAlgorithm?: string): Promise<string> {
  return await hmac(await importMacKey(macKey, macAlgorithm), text)
}

/** A fresh nonce `R:M`, R a random signed 64-bit integer as the SDKs send it. */
export function makeNonce (nowMs: number = Date.now()): string {
  const random = new DataView(crypto.getRandomValues(new Uint8Array(8)).buffer).getBigInt64(0)
  return `${random}:${unixMinute(nowMs)}`
}

async function signWith (key: CryptoKey, { method, url, accessToken, nonce = makeNonce() }: Omit<SignRequestOptions, 'macKey'>): Promise<string> {
  return macHeader(accessToken, nonce, await hmac(key, explainSignature({ method, url, nonce })))
}

/** The full Authorization header value, as signRequest makes it, on Web Crypto. */
export async function signRequestAsync (options: SignRequestOptions): Promise<string> {
  return await signWith(await importMacKey(options.macKey, options.macAlgorithm), options)
}

/** A fetch that signs every request with a fresh nonce; the key is imported once, on first use. */
export function createWebSignedFetch ({ accessToken, macKey, macAlgorithm, fetch = globalThis.fetch }: SignedFetchOptions): SignedFetch {
  let key: Promise<CryptoKey> | undefined
  return async (url, init = {}) => {
    key ??= importMacKey(macKey, macAlgorithm)
    const headers = new Headers(init.headers)
    headers.set('authorization', await signWith(await key, { method: init.method ?? 'GET', url, accessToken }))
    return await fetch(url, { ...init, headers })
  }
}
