// The proxies in front (config.trustProxy): which peers' X-Forwarded-* headers are believed.
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyRequest } from 'fastify'

/** Whether an address is one of the trusted proxies. */
export type TrustCheck = (address: string) => boolean

/**
 * The trust check for a list of addresses and CIDR ranges, compiled by the same library and in the
 * same way as Fastify's own `trustProxy` list (so the two never disagree); throws a TypeError on an
 * entry that is not an address or range. No list: nobody is trusted.
 */
export function trustedProxies (list: readonly string[] | undefined): TrustCheck {
  if (list === undefined) return () => false
  const trusts = proxyAddr.compile([...list])
  return (address) => trusts(address, 0)
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The gateway's trust check (config.trustProxy; nobody without one). */
    trustedProxy: TrustCheck
  }
}

/**
 * True when the request's connection comes from a trusted proxy: what may believe the headers
 * such a peer passes on (X-Forwarded-*, a tracing context). Its own peer only, never an address a
 * header names; false on a gateway without `trustProxy`.
 */
export function fromTrustedProxy (request: FastifyRequest): boolean {
  const address = request.raw.socket?.remoteAddress
  return address !== undefined && request.server.trustedProxy(address)
}

/**
 * X-Forwarded-For as the upstream gets it: the caller (the right-most untrusted address) and every
 * trusted hop to its right, ending with the peer. Entries left of the caller are dropped: the
 * caller could have written them. From an untrusted peer, or without `trustProxy`, the peer alone.
 */
export function forwardedFor (request: { ip: string, ips?: string[] }): string {
  // Fastify's list (only with trustProxy) runs from the peer leftwards to the caller.
  const hops = request.ips
  return hops === undefined ? request.ip : hops.length === 1 ? hops[0]! : [...hops].reverse().join(', ')
}
