import { LRUCache } from 'lru-cache'
import type { HmacKey } from '../access/hmac-key.ts'
import { grantIdOf, hashSecret, openMacKey } from '../access/credentials.ts'
import { Pending } from '../store/pending.ts'
import { NonceKeys } from '../store/nonce-key.ts'
import type { AccessTokenRecord, TokenLookup } from '../store/store.ts'
import { ScopeSets } from './scope-sets.ts'
import { hashNameOf, signingKeyOf } from './signature.ts'

/** Who a verified request speaks for; the gateway passes it upstream as x-macgate-* headers. */
export interface MacIdentity {
  readonly openId: string
  readonly clientId: string
  readonly userId: string
  readonly scope: readonly string[]
}

/** An access token that was live when read, with its mac_key opened and its identity made once. */
export interface ActiveToken {
  /** The token's hash (`hashSecret`), as the store keys it: revocations name it, and its nonces' keys are made of it. */
  hash: string
  /**
   * The mac_key prepared as an HMAC key under the record's mac_algorithm, once, for every request
   * that presents the token while cached. Its text is not kept: the key's pads are all a check reads.
   */
  signingKey: HmacKey
  /** When the cache reads the store again (ms, the plugin's clock): at `maxAgeMs` (past its expiry, a hit refuses it without a read). */
  cachedUntil: number
  /**
   * The record's expiry (ms). Of the record only this and the identity are kept: an entry lives
   * long enough to reach V8's old space, and a population past the LRU replaces entries all the
   * time, so what an entry holds is what its major collections sweep.
   */
  expiresAt: number
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
  /** When the cache reads the store again (ms, the plugin's clock): at `negativeTtlMs`. */
  cachedUntil: number
}
type Entry = ActiveToken | NotLive

function isActive (entry: Entry | undefined): entry is ActiveToken {
  return entry !== undefined && 'identity' in entry
}

function live (entry: Entry | undefined, now: number): ActiveToken | undefined {
  return isActive(entry) && entry.expiresAt > now ? entry : undefined
}

/** How long a read's answer is kept. */
interface Lifetimes {
  maxAgeMs: number
  negativeTtlMs: number
}

/**
 * What a read found at `now`, made once for every request that presents the token while it is
 * cached, with when to read it again.
 */
function entryOf (scopeSets: ScopeSets, { maxAgeMs, negativeTtlMs }: Lifetimes, token: string, hash: string, record: AccessTokenRecord | undefined, now: number): Entry {
  if (record === undefined || record.expiresAt <= now) return { hash, cachedUntil: now + negativeTtlMs }
  const { openId, clientId, userId, scope } = record
  const identity = Object.freeze({ openId, clientId, userId, scope: scopeSets.of(scope) })
  const signingKey = signingKeyOf(openMacKey(token, record.macKeySealed, hash), hashNameOf(record.macAlgorithm))
  return { hash, signingKey, cachedUntil: now + maxAgeMs, expiresAt: record.expiresAt, identity }
}

/**
 * A string of the token's own, for what outlives the request. The header parser's token is V8's
 * view into the request's Authorization header (a slice), and a view keeps what it views alive: a
 * cached token held the whole header, up to its 4,096 characters, for as long as it was cached
 * (about 120 bytes an entry with a usual header, 3,900 with a padded one). The token is ASCII (its
 * tag was checked), so its latin1 bytes read back are the same text, in a string of nothing else.
 */
function keptCopy (token: string): string {
  return Buffer.from(token, 'latin1').toString('latin1')
}

/**
 * lru-cache's `get` without options makes an object for them on every call, and writes its status
 * field into the one it is given: one object, reused by every lookup (each runs to its end before the next).
 */
const GET_OPTIONS: LRUCache.GetOptions<string, Entry, unknown> = {}

/** A store read in flight, shared by every miss for its token until it settles. */
interface Reading {
  readonly answer: Pending<Entry>
  /** A revocation (or a gap in the feed) arrived during the read: its answer is not cached but read again. */
  overtaken: boolean
}

/**
 * The hot in-process LRU in front of the store's token reads, keyed by the token itself: a hit
 * costs one map lookup, no hashing. Concurrent misses for one token share one store read (a map of
 * reads in flight, each a `Pending`: a miss makes no promise of its own, store/pending.ts); an entry
 * never outlives its token; a revocation published by any instance (by token hash) drops the entry
 * at once, and a read it overtook is not cached but made again.
 */
export class TokenCache {
  readonly #store: TokenLookup
  readonly #secret: string
  /** The keyed hashes of nonces under the same secret, of a cached token's `hash` and each nonce. */
  readonly nonceKeys: NonceKeys
  readonly #lru: LRUCache<string, Entry> | undefined
  /** Reads in flight by token; bounded as the LRU is (past it, a miss reads alone and is not cached). */
  readonly #reading = new Map<string, Reading>()
  readonly #maxReading: number
  /** Which token a hash names, cached or being read, for revocations, which arrive by hash. */
  readonly #tokenOf = new Map<string, string>()
  readonly #lifetimes: Lifetimes
  /** The cached tokens' scopes, each distinct set held once. */
  readonly #scopeSets = new ScopeSets()
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
    this.nonceKeys = new NonceKeys(secret)
    this.#lifetimes = { maxAgeMs, negativeTtlMs }
    this.#maxReading = max
    if (max > 0) {
      // No ttl of lru-cache's own: an entry's age is checked on the plugin's clock (`cachedUntil`),
      // which tests step, and lru-cache's would read its own clock and set a timer every millisecond.
      this.#lru = new LRUCache<string, Entry>({
        max,
        // A token is cached only when no read of it is in flight: its hash is the entry's alone.
        dispose: (entry, _token, reason) => {
          if (reason !== 'set') this.#tokenOf.delete(entry.hash)
        }
      })
    }
    this.ready = store.onRevocation((hashes) => {
      if (hashes === null) return this.#dropAll()
      for (const hash of hashes) {
        const token = this.#tokenOf.get(hash)
        if (token !== undefined) this.#drop(token, hash)
      }
    })
  }

  /** Entries held now (live tokens and remembered unknown ones). */
  get size (): number {
    return this.#lru?.size ?? 0
  }

  /**
   * The live token, or undefined when it is not ours, unknown, expired or revoked: at once on a
   * cache hit or a value without our tag, through a thenable (no promise of the cache's own) on a
   * store read. `now` is the request's one clock reading (verify.ts).
   */
  lookup (accessToken: string, now: number = this.#clock()): ActiveToken | undefined | PromiseLike<ActiveToken | undefined> {
    const entry = this.#lru?.get(accessToken, GET_OPTIONS)
    if (entry !== undefined) {
      if (now < entry.cachedUntil) {
        this.stats.hits++
        return live(entry, now)
      }
      // Too old: gone before it is read again, so that a read in flight never shares its hash with an entry.
      this.#lru?.delete(accessToken)
    }
    this.stats.misses++
    // A value without our tag is refused here: no hashing, no store read, no cache entry.
    const grantId = grantIdOf(this.#secret, accessToken)
    if (grantId === undefined) return undefined
    return this.#fetch(accessToken, grantId, now).then((found) => live(found, now))
  }

  /**
   * The token's entry: the read in flight for it if there is one, else a new read, cached when it
   * settles. What is kept (the read's, the index's and the entry's key) is the token's own copy.
   */
  #fetch (asked: string, grantId: string, now: number): PromiseLike<Entry> {
    const lru = this.#lru
    if (lru === undefined) return this.#read(asked, hashSecret(asked), grantId, now)
    const shared = this.#reading.get(asked)
    if (shared !== undefined) return shared.answer
    const hash = hashSecret(asked)
    // A flood of distinct tokens past the bound: each reads alone, and nothing it reads is kept.
    if (this.#reading.size >= this.#maxReading) return this.#read(asked, hash, grantId, now)
    const token = keptCopy(asked)
    // Known by hash before the read, so that a revocation arriving meanwhile overtakes it.
    const reading: Reading = { answer: new Pending<Entry>(), overtaken: false }
    this.#reading.set(token, reading)
    this.#tokenOf.set(hash, token)
    const failed = (error: unknown): void => {
      if (!reading.overtaken) {
        this.#reading.delete(token)
        this.#tokenOf.delete(hash)
      }
      reading.answer.reject(error)
    }
    this.#store.getAccessToken(hash, grantId).then((record) => {
      if (reading.overtaken) {
        // Revoked, or the feed lost, meanwhile: the record read may be gone already. Read again
        // (with any read begun since), for every request that waited on this one.
        this.#fetch(token, grantId, now).then((again) => { reading.answer.resolve(again) }, (error: unknown) => { reading.answer.reject(error) })
        return
      }
      let entry: Entry
      try {
        entry = entryOf(this.#scopeSets, this.#lifetimes, token, hash, record, now)
      } catch (error) {
        failed(error)
        return
      }
      this.#reading.delete(token)
      // Its age from the reading of the request that missed: a hit checks the expiry again with its own.
      lru.set(token, entry)
      reading.answer.resolve(entry)
    }, failed)
    return reading.answer
  }

  /** A store read and what it found, not kept. */
  #read (token: string, hash: string, grantId: string, now: number): PromiseLike<Entry> {
    return this.#store.getAccessToken(hash, grantId).then((record) => entryOf(this.#scopeSets, this.#lifetimes, token, hash, record, now))
  }

  /** A revoked token: its entry dropped, and a read of it in flight overtaken. */
  #drop (token: string, hash: string): void {
    const reading = this.#reading.get(token)
    if (reading !== undefined) {
      reading.overtaken = true
      this.#reading.delete(token)
    }
    this.#lru?.delete(token)
    this.#tokenOf.delete(hash)
  }

  /** After a gap in the revocation feed, any entry and any read in flight may be of a revoked token. */
  #dropAll (): void {
    for (const reading of this.#reading.values()) reading.overtaken = true
    this.#reading.clear()
    this.#lru?.clear()
    this.#tokenOf.clear()
  }
}
