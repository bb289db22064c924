import { LRUCache } from 'lru-cache'
import { defaults } from '../config/defaults.ts'
import { MAX_ORIGIN_LENGTH } from '../http/origins.ts'
import type { ClientStore, StoreLifecycle } from '../store/store.ts'

/** The clients that registered one origin: client id → whether it is public. Empty: no client did. */
export type OriginClients = ReadonlyMap<string, boolean>

const NONE: OriginClients = new Map()
/** What a browser sends as a web origin; anything else (`null`, a path, a space) matches no client. */
const ORIGIN_FORM = /^https?:\/\/[^\s/?#]+$/

/**
 * Which clients registered an origin (their redirect URIs' origins and allowed origins), for the
 * CORS checks. With a shared store (Redis, or any store but the embedded one), a bounded LRU keeps each answer, positive or not, for
 * `corsOriginCacheMs` (default 10 s): an origin registered, changed or removed on another instance counts here
 * within that time, and a browser's requests cost one store read per origin and period. The
 * embedded store is in this process: it is asked each time, so a change counts at once. Values
 * that are not origins are answered without a lookup.
 */
export class ClientOrigins {
  readonly #store: ClientStore
  readonly #cache: LRUCache<string, OriginClients> | undefined

  constructor (store: ClientStore & StoreLifecycle, ttlMs: number = defaults.originCache.ttlMs, max: number = defaults.originCache.max) {
    this.#store = store
    if (store.kind !== 'memory' && ttlMs > 0) {
      this.#cache = new LRUCache<string, OriginClients>({
        max,
        ttl: ttlMs,
        // One store read per origin however many requests wait for it.
        fetchMethod: async (origin) => await this.#read(origin)
      })
    }
  }

  /** The clients of `origin`: at once from the cache, else from the store (rejects with its outage). */
  lookup (origin: string): OriginClients | Promise<OriginClients> {
    if (origin.length > MAX_ORIGIN_LENGTH || !ORIGIN_FORM.test(origin)) return NONE
    if (this.#cache === undefined) return this.#read(origin)
    return this.#cache.get(origin) ?? this.#cache.fetch(origin).then((clients) => clients ?? NONE)
  }

  async #read (origin: string): Promise<OriginClients> {
    const clients = await this.#store.clientsOfOrigin(origin)
    return clients.length === 0 ? NONE : new Map(clients.map(({ clientId, public: isPublic }) => [clientId, isPublic]))
  }
}
