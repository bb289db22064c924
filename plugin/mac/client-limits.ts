import { LRUCache } from 'lru-cache'
import type { ClientReader } from '../store/store.ts'

/** Clients whose own limits are held at most, and reads of them in flight at most. */
const MAX_CLIENTS = 10_000

/** How long a client's own limit is used without a store read: a change reaches every instance within this. */
export const CLIENT_LIMIT_MAX_AGE_MS = 10_000

/** A client's own limit as read: its number, or none (the route's default applies), and until when it is used. */
interface Held {
  perMinute: number | undefined
  /** The verifier's clock (ms) at the read's asking, plus `CLIENT_LIMIT_MAX_AGE_MS`. */
  readUntil: number
}

/** lru-cache's `get` without options makes an object for them on every call: one, reused (token-cache.ts). */
const GET_OPTIONS: LRUCache.GetOptions<string, Held, unknown> = {}

/**
 * Each client's own quota (`quotaPerMinute`), read from the store on first use and held
 * `CLIENT_LIMIT_MAX_AGE_MS` by the verifier's clock (the request's one reading, which tests step),
 * so that a limited route costs no store read per request. Concurrent reads for one client are
 * one read; a failed read is not held, and fails every request that waited on it (a store outage:
 * 503). No lru-cache ttl: it would read a clock of its own and keep a timer running under load.
 */
export class ClientLimits {
  readonly #store: ClientReader
  readonly #held = new LRUCache<string, Held>({ max: MAX_CLIENTS })
  /** Reads in flight by client; past `MAX_CLIENTS` of them a read is not shared. */
  readonly #reading = new Map<string, Promise<number | undefined>>()

  constructor (store: ClientReader) {
    this.#store = store
  }

  /** The client's own limit per minute at `now`, or undefined when it has none: at once when held. */
  limitOf (clientId: string, now: number): number | undefined | Promise<number | undefined> {
    const held = this.#held.get(clientId, GET_OPTIONS)
    if (held !== undefined && now < held.readUntil) return held.perMinute
    return this.#reading.get(clientId) ?? this.#read(clientId, now)
  }

  #read (clientId: string, now: number): Promise<number | undefined> {
    const shared = this.#reading.size < MAX_CLIENTS
    const read = this.#store.getClient(clientId).then(
      (client) => {
        if (shared) this.#reading.delete(clientId)
        const perMinute = client?.quotaPerMinute
        this.#held.set(clientId, { perMinute, readUntil: now + CLIENT_LIMIT_MAX_AGE_MS })
        return perMinute
      },
      (error: unknown) => {
        if (shared) this.#reading.delete(clientId)
        throw error
      }
    )
    if (shared) this.#reading.set(clientId, read)
    return read
  }
}
