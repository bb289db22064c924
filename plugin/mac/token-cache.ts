import type { KeyObject } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { grantIdOf, hashSecret, openMacKey } from '../core/credentials.ts'
import type { AccessTokenRecord, TokenLookup } from '../store/store.ts'
import { signingKeyOf } from './signature.ts'

/** Who a verified request speaks for; the gateway passes it upstream as x-macgate-* headers. */
export interface MacIdentity {
  readonly openId: string
  readonly clientId: string
  readonly userId: string
  readonly scope: readonly string[]
}

/** An access token that was live when read, with its mac_key opened and its identity made once. */
export interface ActiveToken {
  hash: string
  macKey: string
  /** The mac_key prepared as an HMAC key once, for every request that presents the token while cached. */
  signingKey: KeyObject
  record: AccessTokenRecord
  /** Frozen: shared by every request that presents the token while it is cached. */
  identity: MacIdentity
}

export interface TokenCacheOptions {
  /** Most tokens held; 0 turns the cache off and every lookup reads the store. */
  max: number
  /** Longest a live token is held without a store read, in ms; revocations arrive sooner. */
  maxAgeMs: number
  /** How long an unknown, expired or revoked token is remembered as such, in ms. */
  negativeTtlMs: number
}

/** Remembered for an unknown token, so that a flood of garbage does not reach the store. */
interface NotLive {
  hash: string
}
type Entry = ActiveToken | NotLive

function isActive (entry: Entry | undefined): entry is ActiveToken {
  return entry !== undefined && 'record' in entry
}

function live (entry: Entry | undefined, now: number): ActiveToken | undefined {
  return isActive(entry) && entry.record.expiresAt > now ? entry : undefined
}

/**
 * The hot in-process LRU in front of the store's token reads, keyed by the token itself: a hit
 * costs one map lookup, no hashing. Concurrent misses for one token share one store read
 * (lru-cache `fetch`); an entry never outlives its token; a revocation published by any instance
 * (by token hash) drops the entry at once.
 */
export class TokenCache {
  readonly #store: TokenLookup
  readonly #secret: string
  readonly #lru: LRUCache<string, Entry, { grantId: string, now: number }> | undefined
  /** Which cached token a hash names, for revocations, which arrive by hash. */
  readonly #tokenOf = new Map<string, string>()
  readonly #maxAgeMs: number
  readonly #negativeTtlMs: number
  readonly #clock: () => number
  /** Resolves once revocations from other instances are being received. */
  readonly ready: Promise<void>
  /** Lookups answered from the cache, and those that went on to a store read or a refusal. */
  readonly stats = { hits: 0, misses: 0 }

  /** `clock`: the plugin's, for a lookup made without the request's reading. */
  constructor (store: TokenLookup, secret: string, { max, maxAgeMs, negativeTtlMs }: TokenCacheOptions, clock: () => number = Date.now) {
    this.#clock = clock
    this.#store = store
    this.#secret = secret
    this.#maxAgeMs = maxAgeMs
    this.#negativeTtlMs = negativeTtlMs
    if (max > 0) {
      this.#lru = new LRUCache<string, Entry, { grantId: string, now: number }>({
        max,
        ttl: maxAgeMs,
        fetchMethod: async (token, _stale, { options, context }) => {
          // Known by hash before the read, so that a revocation arriving meanwhile aborts it.
          const hash = hashSecret(token)
          this.#tokenOf.set(hash, token)
          const entry = await this.#read(token, hash, context.grantId, context.now)
          // From the reading of the request that missed: a hit checks the expiry again with its own.
          options.ttl = isActive(entry) ? Math.max(1, Math.min(this.#maxAgeMs, entry.record.expiresAt - context.now)) : this.#negativeTtlMs
          return entry
        },
        dispose: (entry) => {
          this.#tokenOf.delete(entry.hash)
        }
      })
    }
    this.ready = store.onRevocation((hashes) => {
      if (hashes === null) return this.#lru?.clear()
      for (const hash of hashes) {
        const token = this.#tokenOf.get(hash)
        if (token !== undefined) this.#lru!.delete(token)
      }
    })
  }

  /** Entries held now (live tokens and remembered unknown ones). */
  get size (): number {
    return this.#lru?.size ?? 0
  }

  /**
   * The live token, or undefined when it is not ours, unknown, expired or revoked: at once on a
   * cache hit, through a promise on a miss. `now` is the request's one clock reading (verify.ts).
   */
  lookup (accessToken: string, now: number = this.#clock()): ActiveToken | undefined | Promise<ActiveToken | undefined> {
    const entry = this.#lru?.get(accessToken)
    if (entry !== undefined) {
      this.stats.hits++
      return live(entry, now)
    }
    this.stats.misses++
    return this.#miss(accessToken, now).then((found) => live(found, now))
  }

  async #miss (accessToken: string, now: number): Promise<Entry | undefined> {
    // A value without our tag is refused here: no hashing, no store read, no cache entry.
    const grantId = grantIdOf(this.#secret, accessToken)
    if (grantId === undefined) return undefined
    if (this.#lru === undefined) return await this.#read(accessToken, hashSecret(accessToken), grantId, now)
    const entry = await this.#lru.fetch(accessToken, { context: { grantId, now } })
    if (entry !== undefined) return entry
    // The read was aborted (revoked, evicted or cleared meanwhile): ask the store itself.
    const hash = hashSecret(accessToken)
    if (!this.#lru.has(accessToken)) this.#tokenOf.delete(hash)
    return await this.#read(accessToken, hash, grantId, now)
  }

  async #read (token: string, hash: string, grantId: string, now: number): Promise<Entry> {
    const record = await this.#store.getAccessToken(hash, grantId)
    if (record === undefined || record.expiresAt <= now) return { hash }
    const { openId, clientId, userId, scope } = record
    const identity = Object.freeze({ openId, clientId, userId, scope: Object.freeze([...scope]) })
    const macKey = openMacKey(token, record.macKeySealed)
    return { hash, record, macKey, signingKey: signingKeyOf(macKey), identity }
  }
}
