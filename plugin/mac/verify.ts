import { errors } from '../core/errors.js'
import { NonceKeys } from '../store/nonce-key.js'
import { Quotas, quotaExceeded, type QuotaReading } from './quota.js'
import type { ClientReader, CountedUse, NonceLog, TokenLookup } from '../store/store.js'
import { TokenCache, type ActiveToken, type MacIdentity, type TokenCacheOptions } from './token-cache.js'
import { parseMacHeader, type MacHeader } from './header.js'
import { canonicalQuery, computeMac, hmacOf, macMatches, nonceMinutes, stringToSign, type QueryVariant } from './signature.js'

export type { MacIdentity } from './token-cache.js'

export interface MacRequest {
  method: string
  /** The Host header as sent. */
  host: string
  /** The request target as sent: path and query. */
  url: string
  authorization: string | undefined
  /** On a route with a quota: counted with the nonce (quota.ts), and filled in for the answer's fields. */
  quota?: QuotaReading
}

export interface VerifierOptions {
  /** How far a nonce's minute may lie from ours, either way. */
  nonceSkewMinutes: number
  /** Also accept the query forms other SDKs sign (contract §6): wider, see README's security notes. */
  macQueryVariants: boolean
  tokenCache: TokenCacheOptions
  /** A mac mismatch answers with the server's string to sign, for client developers. */
  macDebug?: boolean
  /** The clock, read once per request (tests step it); default Date.now. */
  clock?: () => number
}

/** The store roles the verifier takes: the token lookup (its cache's), the nonce log, a client's own quota. */
export type VerifierStore = TokenLookup & NonceLog & ClientReader

const VARIANTS: QueryVariant[] = ['form-encoded', 'without-empty']

/** The descriptions of the verifier's 96012 refusals; `outcome.ts` counts each under its reason. */
export const DENIALS = {
  macMismatch: 'mac does not match',
  staleNonce: 'nonce is stale',
  futureNonce: 'nonce is from the future',
  replayedNonce: 'nonce already used',
  tokenParameter: 'token parameter does not match the access token',
  clientIdParameter: 'clientId parameter does not match the token'
} as const

/**
 * The check of one signed request, in Hawk's order: read the clock once (every time check of the
 * request uses that one reading), parse the header, look up the token, compute and compare the mac
 * in constant time, then freshness, query bindings and replay (on a route with a quota, the
 * client's count with the nonce: over it, 429 and the nonce unspent). Each failure is a named
 * protocol error; nothing is written to the store before the mac is proven.
 */
export class MacVerifier {
  readonly cache: TokenCache
  readonly quotas: Quotas
  readonly #store: NonceLog
  readonly #skew: number
  readonly #variants: QueryVariant[]
  readonly #debug: boolean
  readonly #nonceKeys: NonceKeys
  readonly #clock: () => number

  constructor (store: VerifierStore, secret: string, { nonceSkewMinutes, macQueryVariants, tokenCache, macDebug = false, clock = Date.now }: VerifierOptions) {
    this.#store = store
    this.#debug = macDebug
    this.#skew = nonceSkewMinutes
    this.#variants = macQueryVariants ? VARIANTS : []
    this.cache = new TokenCache(store, secret, tokenCache)
    this.#nonceKeys = new NonceKeys(secret)
    this.quotas = new Quotas(store)
    this.#clock = clock
  }

  /**
   * The identity of a verified request, or a named error (thrown, or the promise's rejection). On a
   * cache hit with a store that answers nonces at once, no promise is made at all.
   */
  verify (request: MacRequest): MacIdentity | Promise<MacIdentity> {
    const now = this.#clock()
    if (request.authorization === undefined) throw errors.invalidAuthorization('MAC Authorization header is missing')
    const header = parseMacHeader(request.authorization)
    const found = this.cache.lookup(header.accessToken, now)
    if (found instanceof Promise) return found.then((token) => this.#check(request, header, token, now))
    return this.#check(request, header, found, now)
  }

  #check ({ method, host, url, quota }: MacRequest, header: MacHeader, token: ActiveToken | undefined, now: number): MacIdentity | Promise<MacIdentity> {
    if (token === undefined) throw errors.invalidToken()

    const queryStart = url.indexOf('?')
    const path = queryStart === -1 ? url : url.slice(0, queryStart)
    const rawQuery = queryStart === -1 ? '' : url.slice(queryStart + 1)
    if (!this.#macMatches(header, token, { method, host, path, rawQuery })) throw this.#mismatch(header, { method, host, path, rawQuery })

    const drift = nonceMinutes(now) - header.minutes
    if (drift > this.#skew) throw errors.accessDenied(DENIALS.staleNonce)
    if (drift < -this.#skew) throw errors.accessDenied(DENIALS.futureNonce)
    checkQueryBindings(rawQuery, header.accessToken, token)
    const use = this.#nonceKeys.use(token.hash, header.nonce, header.minutes, this.#nonceTtl(header.minutes, now))
    // A limited route: the quota is checked with the nonce, before it is spent.
    if (quota !== undefined) {
      const counted = this.quotas.count(use, token.identity.clientId, quota, now)
      if (counted instanceof Promise) return counted.then((answer) => this.#admitCounted(answer, token, quota))
      return this.#admitCounted(counted, token, quota)
    }
    const fresh = this.#store.useNonce(use)
    if (fresh instanceof Promise) return fresh.then((first) => admitOnce(first, token))
    return admitOnce(fresh, token)
  }

  #macMatches (header: MacHeader, { signingKey, record }: ActiveToken, request: { method: string, host: string, path: string, rawQuery: string }): boolean {
    const hmac = hmacOf(record.macAlgorithm)
    const sign = (query: string): string => computeMac(signingKey, stringToSign({ nonce: header.nonce, method: request.method, host: request.host, path: request.path, query }), hmac)
    const primary = canonicalQuery(request.rawQuery)
    if (macMatches(sign(primary), header.mac)) return true
    // Other SDKs sign the query differently; try their forms only when they differ.
    const tried = new Set([primary])
    for (const variant of this.#variants) {
      const query = canonicalQuery(request.rawQuery, variant)
      if (tried.has(query)) continue
      tried.add(query)
      if (macMatches(sign(query), header.mac)) return true
    }
    return false
  }

  /** The mismatch error; with macDebug it carries what the server signed, so that a client sees which line differs. */
  #mismatch (header: MacHeader, request: { method: string, host: string, path: string, rawQuery: string }): Error {
    if (!this.#debug) return errors.accessDenied(DENIALS.macMismatch)
    const text = stringToSign({ nonce: header.nonce, method: request.method, host: request.host, path: request.path, query: canonicalQuery(request.rawQuery) })
    return errors.accessDenied(DENIALS.macMismatch, { stringToSign: text })
  }

  /** The quota's answer told to the quotas (the reading's count, a refusal), then the nonce's. */
  #admitCounted (counted: CountedUse, token: ActiveToken, quota: QuotaReading): MacIdentity {
    this.quotas.settle(counted, quota)
    if (counted.outcome === 'over') throw quotaExceeded(quota)
    return admitOnce(counted.outcome === 'fresh', token)
  }

  /** Seconds until the nonce's minute leaves the window: no longer needed after that. */
  #nonceTtl (minutes: number, now: number): number {
    return Math.max(1, (minutes + this.#skew + 1) * 60 - Math.floor(now / 1000))
  }
}

function admitOnce (first: boolean, token: ActiveToken): MacIdentity {
  if (!first) throw errors.accessDenied(DENIALS.replayedNonce)
  return token.identity
}

/**
 * A `token` parameter must be the header's token, a `clientId` parameter the token's client: by
 * their decoded names (`%74oken` is `token`), as the proxy's stripping reads them.
 */
function checkQueryBindings (rawQuery: string, accessToken: string, token: ActiveToken): void {
  if (!rawQuery.includes('token') && !rawQuery.includes('clientId') && !rawQuery.includes('%')) return
  const params = new URLSearchParams(rawQuery)
  if (params.getAll('token').some((value) => value !== accessToken)) throw errors.accessDenied(DENIALS.tokenParameter)
  if (params.getAll('clientId').some((value) => value !== token.record.clientId)) throw errors.accessDenied(DENIALS.clientIdParameter)
}
