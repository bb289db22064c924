// Which host a request names: the signature binds it (contract §6), so it is read in one place.
import type { IncomingHttpHeaders } from 'node:http'

/** A request naming two hosts: HTTP/2's `:authority` and a Host header that differs from it. */
export const TWO_AUTHORITIES = Symbol('macgate.twoAuthorities')

/**
 * The request's authority: `:authority` on HTTP/2 (RFC 9113 §8.3.1), the Host header on HTTP/1.1
 * (or on an HTTP/2 request without `:authority`); '' when neither is there. An HTTP/2 request whose
 * Host header differs from its `:authority` is malformed (the same section): `TWO_AUTHORITIES`, for
 * the caller to refuse with 400, rather than pick one of the two a client and an upstream could
 * each read differently.
 */
export function authorityOf (headers: IncomingHttpHeaders): string | typeof TWO_AUTHORITIES {
  const authority = headers[':authority'] as string | undefined
  if (authority === undefined) return headers.host ?? ''
  return headers.host === undefined || headers.host === authority ? authority : TWO_AUTHORITIES
}
