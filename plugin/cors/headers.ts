// The CORS answer (Fetch standard, "CORS protocol"), in one place for the open API and the token
// endpoint (contract §11). Who is allowed is the caller's decision; this only writes it down.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { defaults } from '../config/defaults.ts'

/** The response headers a browser app may read besides the safelisted ones: why it was refused, when to retry. */
export const EXPOSED_HEADERS = 'WWW-Authenticate, Retry-After, RateLimit, RateLimit-Policy'

/** A CORS preflight: OPTIONS with an Origin and the method the real request will use. */
export function isPreflight (request: FastifyRequest): boolean {
  return request.method === 'OPTIONS' && request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined
}

/** Adds Origin to the answer's Vary, keeping what is there (an upstream's own Vary). */
export function varyOnOrigin (reply: FastifyReply): void {
  const vary = reply.getHeader('vary')
  if (vary === undefined || vary === '') reply.header('vary', 'Origin')
  else if (!/(^|,)\s*(origin|\*)\s*(,|$)/i.test(String(vary))) reply.header('vary', `${String(vary)}, Origin`)
}

/** Removes any Access-Control-* header (an upstream's own): who may read an answer is the gateway's call. */
export function dropCorsHeaders (reply: FastifyReply): void {
  for (const name of Object.keys(reply.getHeaders())) {
    if (name.toLowerCase().startsWith('access-control-')) reply.removeHeader(name)
  }
}

/** Lets `origin` read this answer (never `*`: the answers are per caller), with the headers an app needs. */
export function allowOrigin (reply: FastifyReply, origin: string): void {
  reply.header('access-control-allow-origin', origin)
  reply.header('access-control-expose-headers', EXPOSED_HEADERS)
}

/** A preflight's grant: the methods and request headers the real request may use, for `corsMaxAge`. */
export function allowPreflight (reply: FastifyReply, methods: readonly string[], headers: readonly string[]): void {
  reply.header('access-control-allow-methods', methods.join(', '))
  reply.header('access-control-allow-headers', headers.join(', '))
  reply.header('access-control-max-age', String(defaults.corsMaxAge))
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]{1,64}$/
/** The most request header names a preflight's answer repeats back. */
const MAX_REQUESTED = 32

/** The header names a preflight asks for (`Access-Control-Request-Headers`), lower case, only well-formed ones, bounded. */
export function requestedHeaders (request: FastifyRequest): string[] {
  const value = request.headers['access-control-request-headers']
  if (typeof value !== 'string' || value === '') return []
  return value.split(',', MAX_REQUESTED).map((name) => name.trim().toLowerCase()).filter((name) => TOKEN.test(name))
}
