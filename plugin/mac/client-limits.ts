import { LRUCache } from 'lru-cache'
import type { ClientReader } from '../store/store.ts'

/** Clients whose own limits are held at most. */
const MAX_CLIENTS = 10_000

/** How long a client's own limit is used without a store read: a change reaches every instance within this. */
export const CLIENT_LIMIT_MAX_AGE_MS = 10_000

/** A client's own limit as read: its number, or none (the route's default applies). */
interface Limit {
  perMinute: number | undefined
}

/**
 * Each client's own quota (`quotaPerMinute`), read from the store on first use and held
 * `CLIENT_LIMIT_MAX_AGE_MS`, so that a limited route costs no store read per request. Concurrent
 * misses for one client share one read (lru-cache `fetch`).
 */
export class ClientLimits {
  readonly #lru: LRUCache<string, Limit>

  constructor (store: ClientReader) {
    this.#lru = new LRUCache<string, Limit>({
      max: MAX_CLIENTS,
      ttl: CLIENT_LIMIT_MAX_AGE_MS,
      fetchMethod: async (clientId) => ({ perMinute: (await store.getClient(clientId))?.quotaPerMinute })
    })
  }

  /** The client's own limit per minute, or undefined when it has none: at once when held. */
  limitOf (clientId: string): number | undefined | Promise<number | undefined> {
    const held = this.#lru.get(clientId)
    if (held !== undefined) return held.perMinute
    return this.#lru.fetch(clientId).then((limit) => limit?.perMinute)
  }
}
