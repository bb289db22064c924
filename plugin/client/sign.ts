import { computeMac, hashNameOf, makeNonce } from '../mac/signature.ts'
import { explainSignature, macHeader, type SignedFetch, type SignedFetchOptions, type SignRequestOptions } from './request-signature.ts'

export { explainSignature, type SignedFetch, type SignedFetchOptions, type SignRequestOptions }

/** The full Authorization header value, `MAC access_token="..", nonce="..", mac=".."`. */
export function signRequest ({ method, url, accessToken, macKey, nonce = makeNonce(), macAlgorithm }: SignRequestOptions): string {
  return macHeader(accessToken, nonce, computeMac(macKey, explainSignature({ method, url, nonce }), hashNameOf(macAlgorithm)))
}

/** A fetch that signs every request with a fresh nonce. */
export function createSignedFetch ({ accessToken, macKey, macAlgorithm, fetch = globalThis.fetch }: SignedFetchOptions): SignedFetch {
  return async (url, init = {}) => {
    const headers = new Headers(init.headers)
    headers.set('authorization', signRequest({ method: init.method ?? 'GET', url, accessToken, macKey, ...(macAlgorithm !== undefined && { macAlgorithm }) }))
    return await fetch(url, { ...init, headers })
  }
}
