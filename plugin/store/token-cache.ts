import { LRUCache } from 'lru-cache'
import { grantIdOf, hashSecret, openMacKey } from '../oauth/tokens.js'
import type { AccessTokenRecord, Store } from './store.js'

/** An access token that was live when read, with its mac_key opened. */
export interface ActiveToken {
  hash: string
  grantId: string
  macKey: string
  record: AccessTokenRecord
}

export interface TokenCacheOptions {
  /** Most tokens held; 0 turns the cache off and every lookup reads the store. */
  max?: number
  /** Longest a live token is held without a store read, in ms; revocations arrive sooner. */
  maxAgeMs?: number
  /** How long an unknown, expired or revoked token is remembered as such, in ms. */
  negativeTtlMs?: number
}

// Remembered for unknown tokens, so that a flood of garbage does not reach the store.
const UNKNOWN = Object.freeze({ unknown: true as const })
type Entry = ActiveToken | typeof UNKNOWN

/**
 * The hot in-process LRU in front of the store's token reads. Concurrent misses for one token
 * share one store read (lru-cache `fetch`); an entry never outlives its token; revocations
 * published by any instance drop the entry at once.
 */
export class TokenCache {
  readonly #store: Store
  readonly #secret: string
  readonly #lru: LRUCache<string, Entry, { token: string, grantId: string }> | undefined
  readonly #maxAgeMs: number
  readonly #negativeTtlMs: number
  /** Resolves once revocations from other instances are being received. */
  readonly ready: Promise<void>

  constructor (store: Store, secret: string, { max = 100_000, maxAgeMs = 300_000, negativeTtlMs = 10_000 }: TokenCacheOptions = {}) {
    this.#store = store
    this.#secret = secret
    this.#maxAgeMs = maxAgeMs
    this.#negativeTtlMs = negativeTtlMs
    if (max > 0) {
      this.#lru = new LRUCache<string, Entry, { token: string, grantId: string }>({
        max,
        ttl: maxAgeMs,
        fetchMethod: async (hash, _stale, { options, context }) => {
          const entry = await this.#read(context.token, hash, context.grantId)
          options.ttl = this.#ttlOf(entry)
          return entry
        }
      })
    }
    this.ready = store.onRevocation((hashes) => {
      if (hashes === null) this.#lru?.clear()
      else for (const hash of hashes) this.#lru?.delete(hash)
    })
  }

  /** The live token, or undefined when it is not ours, unknown, expired or revoked. */
  async lookup (accessToken: string): Promise<ActiveToken | undefined> {
    // A value without our tag is refused here: no hashing of it, no store read, no cache entry.
    const grantId = grantIdOf(this.#secret, accessToken)
    if (grantId === undefined) return undefined
    const hash = hashSecret(accessToken)
    const entry = this.#lru === undefined
      ? await this.#read(accessToken, hash, grantId)
      : await this.#cachedRead(accessToken, hash, grantId)
    if (!('record' in entry)) return undefined
    return entry.record.expiresAt > Date.now() ? entry : undefined
  }

  async #cachedRead (token: string, hash: string, grantId: string): Promise<Entry> {
    const entry = await this.#lru!.fetch(hash, { context: { token, grantId } })
    // undefined: the read was aborted (revoked, evicted or cleared meanwhile); ask the store itself.
    return entry ?? await this.#read(token, hash, grantId)
  }

  async #read (token: string, hash: string, grantId: string): Promise<Entry> {
    const record = await this.#store.getAccessToken(hash, grantId)
    if (record === undefined || record.expiresAt <= Date.now()) return UNKNOWN
    return { hash, grantId, record, macKey: openMacKey(token, record.macKeySealed) }
  }

  #ttlOf (entry: Entry): number {
    if (!('record' in entry)) return this.#negativeTtlMs
    return Math.max(1, Math.min(this.#maxAgeMs, entry.record.expiresAt - Date.now()))
  }

  /** Drops one token (revoked here) without waiting for the store's announcement. */
  forget (hash: string): void {
    this.#lru?.delete(hash)
  }
}
