import type { FastifyRequest } from 'fastify'

/** A request's target as sent, split at its first `?`: the path (routing, logs) and the raw query (signing, upstream). */
export interface PathAndQuery {
  path: string
  /** Without its `?`; empty when there is none. */
  query: string
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Split once, by the first `pathAndQuery` call (the plugin decorates it). */
    pathAndQuery: PathAndQuery | null
  }
}

/** Splits a request target as sent. */
export function splitPathAndQuery (url: string): PathAndQuery {
  const start = url.indexOf('?')
  return start === -1 ? { path: url, query: '' } : { path: url.slice(0, start), query: url.slice(start + 1) }
}

/**
 * The request's path and query, split once and carried with the request: the route check, the
 * MAC check, the upstream query, the access line and the error answers read the same split.
 */
export function pathAndQuery (request: Pick<FastifyRequest, 'url' | 'pathAndQuery'>): PathAndQuery {
  request.pathAndQuery ??= splitPathAndQuery(request.url)
  return request.pathAndQuery
}
