import type { FastifyRequest } from 'fastify'
import type { OAuthError } from '../http/errors.ts'
import type { MacIdentity } from './token-cache.ts'

/** How the token cache answered a request's lookup: a live entry, a store read, or a remembered unknown token. */
export type TokenCacheAnswer = 'hit' | 'miss' | 'negative'

/**
 * One MAC check being watched (a trace's `macgate.verify` span): the hook fills in `tokenCache`
 * and calls `end` once, with the identity or the refusal.
 */
export interface VerifyWatch {
  tokenCache: TokenCacheAnswer | undefined
  end: (identity: MacIdentity | undefined, failure: OAuthError | undefined) => void
}

/**
 * Asked at the start of each MAC check: a watch for it, or undefined when nothing records it (the
 * request is not sampled). Without an observer (tracing off) the hook asks nothing.
 */
export type VerifyObserver = (request: FastifyRequest) => VerifyWatch | undefined
