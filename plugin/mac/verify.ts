import { errors, type ErrorOptions, type OAuthError } from '../http/errors.ts'
import { isThenable, Pending } from '../store/pending.ts'
import type { VerificationOutcome } from '../observe/metrics.ts'
import { quotaExceeded, type Quotas, type QuotaReading } from './quota.ts'
import type { CountedUse, NonceLog, TokenLookup } from '../store/store.ts'
import { TokenCache, type ActiveToken, type MacIdentity, type TokenCacheOptions } from './token-cache.ts'
import { parseMacHeader, type MacHeader } from './header.ts'
import { constantTimeEqual } from '../access/constant-time.ts'
import { canonicalQuery, signingHost, unixMinute, stringToSign, type QueryVariant } from './signature.ts'

export type { MacIdentity } from './token-cache.ts'

export interface MacRequest {
  method: string
  /** The authority as sent: the Host header, or `:authority` on HTTP/2 (http/authority.ts). */
  host: string
  /** The request target's path as sent. */
  path: string
  /** Its query as sent, without the `?`. */
  query: string
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
  /** The plugin's clock, read once per request (tests step it); default Date.now. */
  clock?: () => number
  /** What counts requests on routes with a quota; without it, a request with a quota is an internal error. */
  quotas?: Quotas
  /** Public names a signature may bind besides the request's own Host (contract §6); none by default. */
  signedHosts?: readonly string[]
}

/** The store roles the verifier takes: the token lookup (its cache's) and the nonce log's one method. */
export type VerifierStore = TokenLookup & Pick<NonceLog, 'useNonce'>

const VARIANTS: QueryVariant[] = ['form-encoded', 'without-empty']

/** The verifier's 96012 refusals: each one's description, and the reason the error carries (`outcome.ts` counts it). */
export const DENIALS = {
  macMismatch: { description: 'mac does not match', reason: 'mac_mismatch' },
  staleNonce: { description: 'nonce is stale', reason: 'stale_nonce' },
  futureNonce: { description: 'nonce is from the future', reason: 'stale_nonce' },
  replayedNonce: { description: 'nonce already used', reason: 'replayed_nonce' },
  tokenParameter: { description: 'token parameter does not match the access token', reason: 'query_binding' },
  clientIdParameter: { description: 'clientId parameter does not match the token', reason: 'query_binding' }
} as const satisfies Record<string, { description: string, reason: VerificationOutcome }>

type Denial = typeof DENIALS[keyof typeof DENIALS]

/** A 96012 refusal of the verifier, carrying its reason. */
function denied ({ description, reason }: Denial, options: ErrorOptions = {}): OAuthError {
  return errors.accessDenied(description, { ...options, reason })
}

/**
 * The check of one signed request, in Hawk's order: read the clock once (every time check of the
 * request uses that one reading), parse the header, look up the token, compute and compare the mac
 * in constant time, then freshness, query bindings and replay (on a route with a quota, the
 * client's count with the nonce: over it, 429 and the nonce unspent). Each failure is a named
 * protocol error; nothing is written to the store before the mac is proven.
 */
export class MacVerifier {
  readonly cache: TokenCache
  readonly #quotas: Quotas | undefined
  readonly #store: VerifierStore
  readonly #skew: number
  readonly #variants: QueryVariant[]
  readonly #debug: boolean
  readonly #clock: () => number
  #signedHosts: readonly string[] = []

  constructor (store: VerifierStore, secret: string, { nonceSkewMinutes, macQueryVariants, tokenCache, macDebug = false, clock = Date.now, quotas, signedHosts = [] }: VerifierOptions) {
    this.#store = store
    this.#debug = macDebug
    this.#skew = nonceSkewMinutes
    this.#variants = macQueryVariants ? VARIANTS : []
    this.#clock = clock
    this.cache = new TokenCache(store, secret, tokenCache, clock)
    this.#quotas = quotas
    this.useSignedHosts(signedHosts)
  }

  /** The signed host names from now on (a config reload); requests already past the mac check are not affected. */
  useSignedHosts (hosts: readonly string[]): void {
    this.#signedHosts = hosts.map((host) => signingHost(host))
  }

  get signedHosts (): readonly string[] {
    return this.#signedHosts
  }

  /**
   * The identity of a verified request, or a named error (thrown, or the rejection of what comes
   * later). No promise is made here: on a cache hit the embedded store answers nonces at once, and
   * the Redis store's answers (the token read on a cache miss, the nonce) come as `Pending`s,
   * chained here without one.
   */
  verify (request: MacRequest): MacIdentity | PromiseLike<MacIdentity> {
    const now = this.#clock()
    if (request.authorization === undefined) throw errors.invalidAuthorization('MAC Authorization header is missing')
    const header = parseMacHeader(request.authorization)
    const found = this.cache.lookup(header.accessToken, now)
    if (isThenable<ActiveToken | undefined>(found)) return found.then((token) => this.#check(request, header, token, now))
    return this.#check(request, header, found, now)
  }

  #check (request: MacRequest, header: MacHeader, token: ActiveToken | undefined, now: number): MacIdentity | PromiseLike<MacIdentity> {
    if (token === undefined) throw errors.invalidToken()

    if (!this.#macMatchesSomeQueryForm(header, token, request)) throw this.#mismatch(header, request)

    const drift = unixMinute(now) - header.minutes
    if (drift > this.#skew) throw denied(DENIALS.staleNonce)
    if (drift < -this.#skew) throw denied(DENIALS.futureNonce)
    checkQueryBindings(request.query, header.accessToken, token)
    const use = this.cache.nonceKeys.use(token.hash, header.nonce, header.minutes, this.#nonceTtl(header.minutes, now))
    // A limited route: the quota is checked with the nonce, before it is spent.
    const quota = request.quota
    if (quota !== undefined) {
      const quotas = this.#quotas
      if (quotas === undefined) throw new Error('a route with a quota needs a verifier with quotas')
      const counted = quotas.count(use, token.identity.clientId, quota, now)
      if (isThenable<CountedUse>(counted)) return counted.then((answer) => identityUnlessOverQuota(quotas, answer, token, quota))
      return identityUnlessOverQuota(quotas, counted, token, quota)
    }
    // The Redis store's answer is a `Pending` that only this waits on: mapped in place, no promise,
    // closure or other Pending (store/pending.ts).
    const fresh = this.#store.useNonce(use)
    if (fresh instanceof Pending) return fresh.map(identityUnlessReplayed, token)
    if (typeof fresh !== 'boolean') return fresh.then((first) => identityUnlessReplayed(first, token))
    return identityUnlessReplayed(fresh, token)
  }

  /**
   * The request's own Host first, with every query form the SDKs sign; then each listed public name
   * (`signedHosts`) with the primary form only, so that a bad mac costs at most that many more HMACs
   * and a refusal stays cheaper than the slowest success. The nonce is one and spent once, later.
   */
  #macMatchesSomeQueryForm (header: MacHeader, token: ActiveToken, request: MacRequest): boolean {
    const primary = canonicalQuery(request.query)
    if (macMatches(header, token, request, primary, request.host)) return true
    // Other SDKs sign the query differently; try their forms only when they differ.
    if (this.#variants.length > 0 && request.query !== '') {
      const tried = new Set([primary])
      for (const variant of this.#variants) {
        const query = canonicalQuery(request.query, variant)
        if (tried.has(query)) continue
        tried.add(query)
        if (macMatches(header, token, request, query, request.host)) return true
      }
    }
    if (this.#signedHosts.length === 0) return false
    const own = signingHost(request.host)
    for (const host of this.#signedHosts) {
      if (host !== own && macMatches(header, token, request, primary, host)) return true
    }
    return false
  }

  /** The mismatch error; with macDebug it carries what the server signed, so that a client sees which line differs. */
  #mismatch (header: MacHeader, { method, host, path, query }: MacRequest): Error {
    if (!this.#debug) return denied(DENIALS.macMismatch)
    const text = stringToSign({ nonce: header.nonce, method, host, path, query: canonicalQuery(query) })
    return denied(DENIALS.macMismatch, { stringToSign: text })
  }

  /** Seconds until the nonce's minute leaves the window: no longer needed after that. */
  #nonceTtl (minutes: number, now: number): number {
    return Math.max(1, (minutes + this.#skew + 1) * 60 - Math.floor(now / 1000))
  }
}

/** Whether the header's mac is the token's over the request with this query form and host, compared in constant time. */
function macMatches (header: MacHeader, { signingKey }: ActiveToken, { method, path }: MacRequest, query: string, host: string): boolean {
  const text = stringToSign({ nonce: header.nonce, method, host, path, query })
  return constantTimeEqual(signingKey.digest(text, 'base64'), header.mac)
}

function identityUnlessReplayed (first: boolean, token: ActiveToken): MacIdentity {
  if (!first) throw denied(DENIALS.replayedNonce)
  return token.identity
}

/** The quota's answer told to the quotas (the reading's count, a refusal), then the nonce's. */
function identityUnlessOverQuota (quotas: Quotas, counted: CountedUse, token: ActiveToken, quota: QuotaReading): MacIdentity {
  quotas.settle(counted, quota)
  if (counted.outcome === 'over') throw quotaExceeded(quota)
  return identityUnlessReplayed(counted.outcome === 'fresh', token)
}

/**
 * A `token` parameter must be the header's token, a `clientId` parameter the token's client: by
 * their decoded names (`%74oken` is `token`), as the proxy's stripping reads them.
 */
function checkQueryBindings (rawQuery: string, accessToken: string, token: ActiveToken): void {
  if (!rawQuery.includes('token') && !rawQuery.includes('clientId') && !rawQuery.includes('%')) return
  const params = new URLSearchParams(rawQuery)
  if (params.getAll('token').some((value) => value !== accessToken)) throw denied(DENIALS.tokenParameter)
  if (params.getAll('clientId').some((value) => value !== token.identity.clientId)) throw denied(DENIALS.clientIdParameter)
}
