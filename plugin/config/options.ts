import { randomBytes } from 'node:crypto'
import type { Registry } from 'prom-client'
import { defaults, MAX_CODE_TTL, MAX_SIGNED_HOSTS } from './defaults.ts'
import { compileValidator, SchemaError } from './schema.ts'
import { AuditEvents } from '../observe/events.ts'
import { Metrics } from '../observe/metrics.ts'
import { defaultScopes, ScopeRegistry, type ScopeDefinition } from '../access/scope.ts'
import { GRANT_TYPES, normalGrantTypes, type GrantType } from '../access/grant-types.ts'
import type { Store } from '../store/store.ts'

/** The plugin's settings: everything but the store and the secret, as a JSON config file holds them. */
export interface MacgateSettings {
  /** The permission registry (contract section 7). */
  scopes?: ScopeDefinition[]
  /** Demand the whole redirect_uri be equal to a registered one (RFC 9700 §4.1.3). */
  strictRedirectUri?: boolean
  /** 200 answers token errors with HTTP 200, for legacy SDKs that throw on other statuses. */
  tokenErrorStatus?: 200
  /** Seconds; codes at most 600. */
  codeTtl?: number
  accessTokenTtl?: number
  refreshTokenTtl?: number
  /** Sign-in attempts allowed per client address and minute. */
  signInRateLimit?: number
  /** Failed client authentications at the token endpoint allowed per minute, per client_id and per address. */
  clientAuthRateLimit?: { perClient?: number, perAddress?: number }
  /** Mark the session cookie Secure on every answer; without it, on answers over TLS only (turn on behind a TLS proxy). */
  secureCookies?: boolean
  /** Seconds a device authorization (RFC 8628) waits for the user; at most 1800. */
  deviceCodeTtl?: number
  /** Seconds a device waits between polls, at first. */
  devicePollInterval?: number
  /** Device authorizations started per minute, per client_id and per address. */
  deviceAuthorizationRateLimit?: { perClient?: number, perAddress?: number }
  /** Wrong user codes entered per minute on the verification page: per session, per address, across the deployment. */
  userCodeGuessLimit?: { perSession?: number, perAddress?: number, perDeployment?: number }
  /**
   * Seconds after a rotation during which the spent refresh token, presented again, answers with
   * the same successor token set instead of revoking the grant (a lost answer, parallel refreshes).
   * 0 (default): reuse always revokes.
   */
  refreshReuseGraceSeconds?: number
  /** Answer a mac mismatch with the server's string to sign (`string_to_sign`): for development. */
  macDebug?: boolean
  /** The issuer the RFC 8414 metadata names (an https URL in production); default: the listening address a request reached. */
  issuer?: string
  /** How far a nonce's minute may lie from ours, either way, in minutes. */
  nonceSkewMinutes?: number
  /**
   * Also accept a signature over the query as the Java SDK (form-encoded values) or the
   * documentation (empty values left out) signs it. Wider: see contract §6. Default on.
   */
  macQueryVariants?: boolean
  /**
   * Public host names a signature may bind besides the request's own Host (contract §6), at most 5:
   * for SDKs that sign a fixed name whatever URL they call. Tried after the request's own Host, with
   * the primary query form only.
   */
  signedHosts?: string[]
  /** The verifier's token LRU. */
  tokenCache?: { max?: number, maxAgeMs?: number, negativeTtlMs?: number }
  /** Answer CORS for the registered clients' origins (contract §11); false: no CORS header anywhere. Default on. */
  cors?: boolean
  /** With Redis: how long, in ms, an origin's clients are kept in process before a store read again (0: every time). */
  corsOriginCacheMs?: number
  /**
   * Who may register a client at `POST /oauth2/register` (RFC 7591): `off` (default, no endpoint),
   * `token` (an operator's initial access token), `open` (anyone, rate-limited); the object form
   * also bounds what a registration may ask for.
   */
  registration?: RegistrationMode | RegistrationSettings
  /** With registration `open`: registrations per client address and minute (an IPv6 caller by its /64). */
  registrationRateLimit?: number
  /**
   * Who may register and manage their own apps at `/oauth2/developer`: `off` (default), `developers`
   * (users an operator marked), `everyone` (any signed-in user; only with registration `open`, so
   * that the console never gets round the `token` gate).
   */
  developerConsole?: DeveloperConsoleMode
  /** Apps one user may own through the console. */
  developerAppLimit?: number
}

export type DeveloperConsoleMode = 'off' | 'developers' | 'everyone'

export type RegistrationMode = 'off' | 'token' | 'open'

export interface RegistrationSettings {
  mode: RegistrationMode
  /** The scopes a registration may ask for (default: every scope of the registry); also its default scope. */
  scopes?: string[]
  /** The grant types a registration may ask for (RFC names; default authorization_code and refresh_token). */
  grantTypes?: string[]
  /** The quota each self-registered client gets (its own limit per minute on every route with a quota). */
  defaultQuotaPerMinute?: number
}

/** The registration settings resolved: the mode and its bounds. */
export interface RegistrationPolicy {
  mode: RegistrationMode
  scopes: string[]
  grantTypes: GrantType[]
  defaultQuotaPerMinute?: number
}

export interface MacgateOptions extends MacgateSettings {
  /** Where clients, users, codes and tokens live: `MemoryStore` or `RedisStore`. The caller closes it. */
  store: Store
  /** Signs sessions, tags tokens and derives openIds. Default: one created once and kept in the store. */
  secret?: string
  /** Where the `macgate_*` Prometheus metrics are registered. Default: a registry of the plugin's own (`fastify.macgate.metrics.registry`). */
  metricsRegistry?: Registry
  /**
   * The plugin's one clock, Unix ms: every expiry, grace, window and freshness check reads it (a
   * verified request once). Tests step it. Default: Date.now.
   */
  clock?: () => number
}

/** The options with every default filled in, shared by the plugin's parts. */
export interface MacgateContext {
  store: Store
  secret: string
  registry: ScopeRegistry
  metrics: Metrics
  /** The audit trail: typed events an embedding app subscribes to. */
  events: AuditEvents
  strictRedirectUri: boolean
  tokenErrorStatus: 200 | undefined
  codeTtl: number
  accessTokenTtl: number
  refreshTokenTtl: number
  signInRateLimit: number
  clientAuthRateLimit: { perClient: number, perAddress: number }
  secureCookies: boolean
  deviceCodeTtl: number
  devicePollInterval: number
  deviceAuthorizationRateLimit: { perClient: number, perAddress: number }
  userCodeGuessLimit: { perSession: number, perAddress: number, perDeployment: number }
  issuer?: string
  macDebug: boolean
  refreshReuseGraceSeconds: number
  nonceSkewMinutes: number
  macQueryVariants: boolean
  signedHosts: string[]
  tokenCache: { max: number, maxAgeMs: number, negativeTtlMs: number }
  cors: boolean
  corsOriginCacheMs: number
  registration: RegistrationPolicy
  registrationRateLimit: number
  developerConsole: DeveloperConsoleMode
  developerAppLimit: number
  /** Routes with a quota, by their counter name, as `macAuth` hooks were made for them: what the console reads a client's use from. */
  quotaRoutes: Map<string, number>
  /** The plugin's one clock (MacgateOptions.clock). */
  clock: () => number
}

const seconds = { type: 'integer', minimum: 1 }

/** The JSON schema of MacgateSettings, with the defaults; the gateway's config file embeds it. */
export const settingsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    scopes: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'description'],
        properties: { id: { type: 'string', pattern: '^[0-9]+$' }, description: { type: 'string', minLength: 1 } }
      }
    },
    strictRedirectUri: { type: 'boolean', default: defaults.strictRedirectUri },
    tokenErrorStatus: { const: 200 },
    codeTtl: { ...seconds, maximum: MAX_CODE_TTL, default: defaults.codeTtl },
    accessTokenTtl: { ...seconds, default: defaults.accessTokenTtl },
    refreshTokenTtl: { ...seconds, default: defaults.refreshTokenTtl },
    signInRateLimit: { type: 'integer', minimum: 1, default: defaults.signInRateLimit },
    clientAuthRateLimit: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        perClient: { type: 'integer', minimum: 1, default: defaults.clientAuthRateLimit.perClient },
        perAddress: { type: 'integer', minimum: 1, default: defaults.clientAuthRateLimit.perAddress }
      }
    },
    secureCookies: { type: 'boolean', default: defaults.secureCookies },
    deviceCodeTtl: { ...seconds, maximum: 1800, default: defaults.deviceCodeTtl },
    devicePollInterval: { ...seconds, maximum: 60, default: defaults.devicePollInterval },
    deviceAuthorizationRateLimit: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        perClient: { type: 'integer', minimum: 1, default: defaults.deviceAuthorizationRateLimit.perClient },
        perAddress: { type: 'integer', minimum: 1, default: defaults.deviceAuthorizationRateLimit.perAddress }
      }
    },
    userCodeGuessLimit: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        perSession: { type: 'integer', minimum: 1, default: defaults.userCodeGuessLimit.perSession },
        perAddress: { type: 'integer', minimum: 1, default: defaults.userCodeGuessLimit.perAddress },
        perDeployment: { type: 'integer', minimum: 1, default: defaults.userCodeGuessLimit.perDeployment }
      }
    },
    macDebug: { type: 'boolean', default: false },
    refreshReuseGraceSeconds: { type: 'integer', minimum: 0, maximum: 300, default: 0 },
    issuer: { type: 'string', pattern: '^https?://[^/?#]+(/[^?#]*)?$' },
    nonceSkewMinutes: { type: 'integer', minimum: 1, maximum: 60, default: defaults.nonceSkewMinutes },
    macQueryVariants: { type: 'boolean', default: defaults.macQueryVariants },
    signedHosts: {
      type: 'array',
      maxItems: MAX_SIGNED_HOSTS,
      uniqueItems: true,
      default: [],
      // A DNS name as a client signs it: no port, no scheme (the check lower-cases both sides).
      items: { type: 'string', minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$' }
    },
    tokenCache: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        max: { type: 'integer', minimum: 0, default: defaults.tokenCache.max },
        maxAgeMs: { type: 'integer', minimum: 1, default: defaults.tokenCache.maxAgeMs },
        negativeTtlMs: { type: 'integer', minimum: 1, default: defaults.tokenCache.negativeTtlMs }
      }
    },
    cors: { type: 'boolean', default: defaults.cors },
    corsOriginCacheMs: { type: 'integer', minimum: 0, maximum: 300_000, default: defaults.originCache.ttlMs },
    registration: {
      default: defaults.registration,
      anyOf: [
        { enum: ['off', 'token', 'open'] },
        {
          type: 'object',
          additionalProperties: false,
          required: ['mode'],
          properties: {
            mode: { enum: ['off', 'token', 'open'] },
            scopes: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^[0-9]+$' } },
            grantTypes: { type: 'array', minItems: 1, items: { enum: GRANT_TYPES } },
            defaultQuotaPerMinute: { type: 'integer', minimum: 0, maximum: 1_000_000_000 }
          }
        }
      ]
    },
    registrationRateLimit: { type: 'integer', minimum: 1, maximum: 100_000, default: defaults.registrationRateLimit },
    developerConsole: { enum: ['off', 'developers', 'everyone'], default: defaults.developerConsole },
    developerAppLimit: { type: 'integer', minimum: 1, maximum: 10_000, default: defaults.developerAppLimit }
  }
} as const

type ResolvedSettings = Omit<MacgateContext, 'store' | 'secret' | 'registry' | 'metrics' | 'events' | 'clock' | 'registration' | 'quotaRoutes'> & { scopes?: ScopeDefinition[], registration: RegistrationMode | RegistrationSettings }
const validateSettings = compileValidator<ResolvedSettings>(settingsSchema, 'option')

function isStore (value: unknown): value is Store {
  return typeof value === 'object' && value !== null && typeof (value as Store).getClient === 'function'
}

/** The registration setting in its one form; its scopes must be the registry's (a RangeError). */
function registrationPolicy (setting: RegistrationMode | RegistrationSettings, registry: ScopeRegistry): RegistrationPolicy {
  const { mode, scopes = registry.ids(), grantTypes = defaults.registrationGrantTypes, defaultQuotaPerMinute } = typeof setting === 'string' ? { mode: setting } : setting
  const unknown = scopes.find((scope) => !registry.has(scope))
  if (unknown !== undefined) throw new RangeError(`macgate option registration.scopes has scope ${unknown}, which is not in the permission registry`)
  const normal = normalGrantTypes(grantTypes)
  if ('problem' in normal) throw new RangeError(`macgate option registration.grantTypes: ${normal.problem}`)
  return { mode, scopes: [...new Set(scopes)], grantTypes: normal.grantTypes, ...(defaultQuotaPerMinute !== undefined && { defaultQuotaPerMinute }) }
}

/** Validates every option (a RangeError naming each bad one) and fills in the defaults. */
export async function resolveOptions (options: MacgateOptions): Promise<MacgateContext> {
  const { store, secret, metricsRegistry, clock = Date.now, ...settings } = options
  if (!isStore(store)) throw new TypeError('macgate option store is required: a MemoryStore or RedisStore')
  if (secret !== undefined && (typeof secret !== 'string' || secret === '')) throw new RangeError('macgate option secret must be a non-empty string')
  let resolved: ResolvedSettings
  try {
    resolved = validateSettings(settings)
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error
    throw new RangeError(`macgate ${error.message.replaceAll('; option', '; macgate option')}`)
  }
  const { scopes, registration, ...rest } = resolved
  const registry = new ScopeRegistry(scopes ?? defaultScopes)
  const policy = registrationPolicy(registration, registry)
  // Anyone signed in may register apps only where anyone may register them anyway.
  if (rest.developerConsole === 'everyone' && policy.mode !== 'open') {
    throw new RangeError(`macgate option developerConsole may be "everyone" only with registration "open" (registration is "${policy.mode}"): use "developers"`)
  }
  return {
    ...rest,
    registration: policy,
    quotaRoutes: new Map(),
    tokenErrorStatus: rest.tokenErrorStatus,
    store,
    secret: secret ?? await store.serverSecret(randomBytes(32).toString('base64url')),
    registry,
    metrics: new Metrics(metricsRegistry),
    events: new AuditEvents(clock),
    clock
  }
}
