// Base64 without Buffer, for the browser entry: the standard alphabet (macs, as the server's
// `digest('base64')`) and base64url (PKCE values and state, RFC 7636 appendix A).

export function base64 (bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

export function base64url (bytes: Uint8Array): string {
  return base64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** `size` random bytes as base64url: a state, or a PKCE verifier (32 bytes give its 43 characters). */
export function randomText (size: number): string {
  return base64url(crypto.getRandomValues(new Uint8Array(size)))
}
