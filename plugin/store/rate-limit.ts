import type { HitCounters } from './roles.ts'

type Callback = (error: Error | null, result?: { current: number, ttl: number }) => void
/** What @fastify/rate-limit hands a store for a route: its options, with the route under `routeInfo`. */
type RouteParams = object & { routeInfo?: { method?: unknown, url?: unknown } }

/**
 * A counter backend for @fastify/rate-limit on macgate's own store, so that every instance on one
 * Redis counts together, and a store outage is the store's own 503 (never a raw client error).
 */
export function rateLimitBackend (store: HitCounters) {
  return class StoreCounter {
    readonly #namespace: string

    constructor (params: RouteParams = {}) {
      // One counter per route, so that limits of different routes do not add up.
      const route = params.routeInfo
      this.#namespace = route?.url === undefined ? 'global:' : `${String(route.method)}${String(route.url)}:`
    }

    incr (key: string, callback: Callback, timeWindow: number): void {
      store.countHit(`ratelimit:${this.#namespace}${key}`, timeWindow)
        .then(({ count, resetMs }) => callback(null, { current: count, ttl: resetMs }), callback)
    }

    child (params: RouteParams): StoreCounter {
      return new StoreCounter(params)
    }
  }
}
