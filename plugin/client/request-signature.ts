// What both signers share (the Node one in sign.ts, the Web Crypto one in web-sign.ts): the string
// a request is signed over and the header that carries the mac. Plain string work, no Node built-in.
import { canonicalQuery, stringToSign } from '../mac/string-to-sign.ts'

/**
 * The string a request is signed over (nonce, method, host without port, path, canonical query, one
 * per line): to set beside a server's `string_to_sign` (its `macDebug` answer) and see which differs.
 */
export function explainSignature ({ method, url, nonce }: { method: string, url: string | URL, nonce: string }): string {
  const target = new URL(url)
  return stringToSign({
    nonce,
    method,
    host: target.host,
    // pathname and search are what fetch puts on the request line (already percent-encoded).
    path: target.pathname,
    query: canonicalQuery(target.search.slice(1))
  })
}

/** The full Authorization header value, `MAC access_token="..", nonce="..", mac=".."`. */
export function macHeader (accessToken: string, nonce: string, mac: string): string {
  // The server percent-decodes every value; encoding keeps `"` or `,` in a token from breaking the header.
  const quote = encodeURIComponent
  return `MAC access_token="${quote(accessToken)}", nonce="${quote(nonce)}", mac="${quote(mac)}"`
}

export interface SignRequestOptions {
  method: string
  /** Absolute URL of the request; host, path and query are taken from it. */
  url: string | URL
  accessToken: string
  macKey: string
  /** Defaults to a fresh random nonce for the current minute. */
  nonce?: string
  /** The token response's mac_algorithm: HmacSha1 (default) or HmacSha256. */
  macAlgorithm?: string
}

export interface SignedFetchOptions {
  accessToken: string
  macKey: string
  macAlgorithm?: string
  fetch?: typeof globalThis.fetch
}

export type SignedFetch = (url: string | URL, init?: RequestInit) => Promise<Response>
