import { randomBytes } from 'node:crypto'
import { defaultScopes, ScopeRegistry, type ScopeDefinition } from './oauth/scope.js'
import type { Store } from './store/store.js'
import type { VerifierOptions } from './mac/verify.js'

export interface MacgateOptions {
  /** Where clients, users, codes and tokens live: `MemoryStore` or `RedisStore`. */
  store: Store
  /** Signs sessions and derives openIds. Default: one created and kept in the store. */
  secret?: string
  /** The permission registry (contract section 7). */
  scopes?: ScopeDefinition[]
  /** Demand the whole redirect_uri be equal to a registered one (RFC 9700 §4.1.3). */
  strictRedirectUri?: boolean
  /** 200 answers token errors with HTTP 200, for legacy SDKs that throw on other statuses. */
  tokenErrorStatus?: 200
  /** Seconds. Codes at most 600. */
  codeTtl?: number
  accessTokenTtl?: number
  refreshTokenTtl?: number
  /** Sign-in attempts allowed per client address and minute. */
  signInRateLimit?: number
  /** Send the session cookie only over HTTPS; turn on behind TLS. */
  secureCookies?: boolean
  /** The MAC verifier: nonce window and token cache. */
  mac?: VerifierOptions
}

/** The options with every default filled in, shared by the plugin's parts. */
export interface MacgateConfig {
  store: Store
  secret: string
  registry: ScopeRegistry
  strictRedirectUri: boolean
  tokenErrorStatus: 200 | undefined
  codeTtl: number
  accessTokenTtl: number
  refreshTokenTtl: number
  signInRateLimit: number
  secureCookies: boolean
}

const TEN_YEARS = 10 * 365 * 24 * 3600

function positiveSeconds (name: string, value: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new RangeError(`macgate option ${name} must be a whole number of seconds from 1 to ${max}`)
  }
  return value
}

export async function resolveOptions (options: MacgateOptions): Promise<MacgateConfig> {
  if (options.store === undefined) throw new TypeError('macgate option store is required')
  if (options.tokenErrorStatus !== undefined && options.tokenErrorStatus !== 200) {
    throw new RangeError('macgate option tokenErrorStatus can only be 200')
  }
  return {
    store: options.store,
    secret: options.secret ?? await options.store.serverSecret(randomBytes(32).toString('base64url')),
    registry: new ScopeRegistry(options.scopes ?? defaultScopes),
    strictRedirectUri: options.strictRedirectUri ?? false,
    tokenErrorStatus: options.tokenErrorStatus,
    codeTtl: positiveSeconds('codeTtl', options.codeTtl ?? 300, 600),
    accessTokenTtl: positiveSeconds('accessTokenTtl', options.accessTokenTtl ?? 7_776_000),
    refreshTokenTtl: positiveSeconds('refreshTokenTtl', options.refreshTokenTtl ?? TEN_YEARS),
    signInRateLimit: options.signInRateLimit ?? 10,
    secureCookies: options.secureCookies ?? false
  }
}
