import type { FastifyReply, FastifyRequest } from 'fastify'
import { authorityOf, TWO_AUTHORITIES } from '../http/authority.ts'
import { errors, toOAuthError, type OAuthError } from '../http/errors.ts'
import { isThenable, Pending, type Receiver } from '../store/pending.ts'
import { pathAndQuery } from '../http/path-and-query.ts'
import { sendOpenApiError } from '../http/replies.ts'
import type { VerificationOutcome } from '../observe/metrics.ts'
import { outcomeOf } from './outcome.ts'
import type { MacIdentity, MacVerifier } from './verify.ts'
import { QuotaReading, type RouteQuota } from './quota.ts'
import { setRateLimitFields } from './rate-limit-fields.ts'
import type { TokenCacheAnswer, VerifyObserver, VerifyWatch } from './verify-observer.ts'

/** Where the hook counts each request's outcome (plain integers, read at each metrics scrape). */
export type OutcomeCounts = Record<VerificationOutcome, number>

export interface MacAuthOptions {
  /** Scopes the token must have been granted. */
  scopes?: string[]
  /** `all` (default): every one of `scopes`; `any`: at least one. */
  match?: 'all' | 'any'
  /** A limit per client and minute on the route (README, "Quotas"). */
  quota?: RouteQuota
  /** Told of each check (tracing's verify span); undefined when tracing is off. */
  observer?: VerifyObserver
}

/**
 * An `onRequest` hook in Fastify's callback style: a verified request goes on with `done()`, a
 * refused one is answered and goes no further. A plain function, so that a caller's own hook
 * (the gateway's route check) can call it; no promise is made when the check needs none.
 */
export type MacAuthHook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void

/** RFC 9112 §3.2: more than one Host line is a 400. Node keeps the first; the signature covers one. */
function repeatsHost (rawHeaders: string[]): boolean {
  let seen = false
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    if (name.length === 4 && name.toLowerCase() === 'host') {
      if (seen) return true
      seen = true
    }
  }
  return false
}

export const HOST_DIFFERS = 'the Host header differs from :authority'

/** Loops, not `every`/`some` with a closure: it runs on every verified request. */
function granted (scope: readonly string[], required: string[], match: 'all' | 'any'): boolean {
  if (required.length === 0) return true
  const any = match === 'any'
  for (let i = 0; i < required.length; i++) {
    if (scope.includes(required[i]!) === any) return any
  }
  return !any
}

/**
 * How the token cache answered the check that just ran (its lookup is synchronous, so its counters
 * moved for this request alone): a store read, a remembered unknown token (refused at once as
 * unknown), a live entry; undefined when the check ended before the lookup (a malformed header).
 */
function cacheAnswer ({ cache: { stats } }: MacVerifier, hits: number, misses: number, thrown: unknown): TokenCacheAnswer | undefined {
  if (stats.misses !== misses) return 'miss'
  if (stats.hits === hits) return undefined
  return errors.invalidToken.is(thrown) ? 'negative' : 'hit'
}

/** Answers a refusal in the open API's shape; the reason is counted and kept for the access log. */
function refuse (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void, failure: OAuthError, counts: OutcomeCounts, quota?: QuotaReading, watch?: VerifyWatch): void {
  counts[outcomeOf(failure)]++
  watch?.end(undefined, failure)
  if (quota !== undefined) setRateLimitFields(reply, quota)
  request.macRejection = failure.message
  sendOpenApiError(reply, failure).catch(done)
}

/** Refuses with whatever was thrown, as a member of the error family (an unexpected one logged). */
function refuseThrown (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void, error: unknown, counts: OutcomeCounts, quota?: QuotaReading, watch?: VerifyWatch): void {
  const failure = toOAuthError(error)
  if (errors.internal.is(failure)) request.log.error({ err: error }, 'MAC verification failed')
  refuse(request, reply, done, failure, counts, quota, watch)
}

/** What a route's hook admits by: its scopes, counted outcomes and the refusal of a token short of scope. */
interface Admittance {
  counts: OutcomeCounts
  scopes: string[]
  match: 'all' | 'any'
  /** The refusal's description, made once per route. */
  missing: string
}

/** A verified identity in: refused when short of the route's scopes, else the request goes on. */
function admit ({ counts, scopes, match, missing }: Admittance, request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void, identity: MacIdentity, quota: QuotaReading | undefined, watch: VerifyWatch | undefined): void {
  if (!granted(identity.scope, scopes, match)) return refuse(request, reply, done, errors.scopeNotGranted(missing), counts, quota, watch)
  if (quota !== undefined) setRateLimitFields(reply, quota)
  counts.ok++
  watch?.end(identity, undefined)
  request.macIdentity = identity
  done()
}

/**
 * One request waiting for its verification's answer (a Redis nonce's, a token read's): the answer's
 * two ends as methods, so that waiting makes one object, not two closures and their context.
 */
class Admission implements Receiver<MacIdentity> {
  readonly #admittance: Admittance
  readonly #request: FastifyRequest
  readonly #reply: FastifyReply
  readonly #done: (error?: Error) => void
  readonly #quota: QuotaReading | undefined
  readonly #watch: VerifyWatch | undefined

  constructor (admittance: Admittance, request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void, quota: QuotaReading | undefined, watch: VerifyWatch | undefined) {
    this.#admittance = admittance
    this.#request = request
    this.#reply = reply
    this.#done = done
    this.#quota = quota
    this.#watch = watch
  }

  fulfilled (identity: MacIdentity): void {
    admit(this.#admittance, this.#request, this.#reply, this.#done, identity, this.#quota, this.#watch)
  }

  rejected (error: unknown): void {
    refuseThrown(this.#request, this.#reply, this.#done, error, this.#admittance.counts, this.#quota, this.#watch)
  }
}

/**
 * A hook that admits only MAC-signed requests with the required scopes, before any body is read;
 * the caller's identity is left on `request.macIdentity`. A refusal is answered here, in the open
 * API's shape. On a route with a quota, the verifier counts it with the nonce and every answer
 * carries the RateLimit fields.
 */
export function macAuthHook (verifier: MacVerifier, counts: OutcomeCounts, { scopes = [], match = 'all', quota: routeQuota, observer }: MacAuthOptions = {}): MacAuthHook {
  const admittance: Admittance = { counts, scopes, match, missing: `scope ${scopes.join(match === 'any' ? ' or ' : ' and ')} not granted` }
  return function macAuth (request, reply, done) {
    const quota = routeQuota === undefined ? undefined : new QuotaReading(routeQuota)
    const watch = observer?.(request)
    if (repeatsHost(request.raw.rawHeaders)) return refuse(request, reply, done, errors.invalidRequest('more than one Host header'), counts, quota, watch)
    const host = authorityOf(request.headers)
    if (host === TWO_AUTHORITIES) return refuse(request, reply, done, errors.invalidRequest(HOST_DIFFERS), counts, quota, watch)
    // Traced only: the cache's counters before the check, to tell how it answered.
    const hits = watch === undefined ? 0 : verifier.cache.stats.hits
    const misses = watch === undefined ? 0 : verifier.cache.stats.misses
    let result: MacIdentity | PromiseLike<MacIdentity>
    try {
      const { path, query } = pathAndQuery(request)
      result = verifier.verify({ method: request.method, host, path, query, authorization: request.headers.authorization, quota })
    } catch (error) {
      if (watch !== undefined) watch.tokenCache = cacheAnswer(verifier, hits, misses, error)
      return refuseThrown(request, reply, done, error, counts, quota, watch)
    }
    if (watch !== undefined) watch.tokenCache = cacheAnswer(verifier, hits, misses, undefined)
    if (!isThenable<MacIdentity>(result)) return admit(admittance, request, reply, done, result, quota, watch)
    const admission = new Admission(admittance, request, reply, done, quota, watch)
    // The verifier's later answers are Pendings (store/pending.ts); any other thenable is waited on as a promise.
    if (result instanceof Pending) result.deliver(admission)
    else result.then((identity) => { admission.fulfilled(identity) }, (error: unknown) => { admission.rejected(error) })
  }
}
