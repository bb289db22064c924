// The plugin's only door: what `macgate` exports is what the gateway, the bench and users' apps
// may use; nothing imports a file inside plugin/ from outside it.
import fastifyRateLimit from '@fastify/rate-limit'
import type { FastifyError, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { registerSessions } from './account/session.ts'
import { signInRoutes } from './account/signin.ts'
import { appsRoutes } from './account/apps.ts'
import { developerRoutes } from './developer/console.ts'
import { resolveOptions, type MacgateContext, type MacgateOptions, type MacgateSettings } from './config/options.ts'
import { errors, toOAuthError } from './http/errors.ts'
import { parseForm } from './http/params.ts'
import { securityHeaders, sendErrorPage } from './http/replies.ts'
import { macAuthHook, type MacAuthHook, type MacAuthOptions } from './mac/hook.ts'
import { MacVerifier, type MacIdentity } from './mac/verify.ts'
import { watchQuotaRefusals } from './mac/quota-refusals.ts'
import { Quotas, type RouteQuota } from './mac/quota.ts'
import { authorizeRoutes } from './oauth/authorize-endpoint.ts'
import { deviceVerificationRoutes } from './oauth/device/verification-page.ts'
import { standardRoutes } from './oauth/standard-endpoints.ts'
import { standardTokenRoutes } from './oauth/standard-token-endpoint.ts'
import { tokenRoutes } from './oauth/token-endpoint.ts'
import { ClientOrigins } from './cors/client-origins.ts'
import { TokenEndpointCors } from './cors/token-endpoint.ts'
import { rateLimitBackend } from './store/rate-limit.ts'
import { registrationRoutes } from './developer/registration.ts'

export type { MacgateOptions, MacgateContext, MacgateSettings } from './config/options.ts'
export { settingsSchema } from './config/options.ts'
export { defaults, MAX_CODE_TTL, MAX_SIGNED_HOSTS, TEN_YEARS } from './config/defaults.ts'
export { errors, OAuthError, isOAuthError, toOAuthError, type OAuthErrorFactory } from './http/errors.ts'
export { authorityOf, TWO_AUTHORITIES } from './http/authority.ts'
export { pathAndQuery, splitPathAndQuery, type PathAndQuery } from './http/path-and-query.ts'
export { escapeHtml, FAVICON_SVG, layout } from './http/html.ts'
export { SECURITY_HEADERS, securityHeaders, sendErrorPage, sendOpenApiError, sendPage, sendTokenBody, sendTokenError } from './http/replies.ts'
export { compileValidator, SchemaError } from './config/schema.ts'
export { defaultScopes, ScopeRegistry, type ScopeDefinition } from './access/scope.ts'
export { DEVICE_CODE_GRANT, GRANT_SHORT_NAMES, GRANT_TYPES, grantTypesOfShortNames, isGrantType, normalGrantTypes, shortNamesOf, type GrantType, type ResponseType } from './access/grant-types.ts'
export { MemoryStore, type MemoryStoreOptions } from './store/memory/memory-store.ts'
export { RedisStore, type RedisStoreOptions, type RedisTarget } from './store/redis/redis-store.ts'
export type { ClientChanges, ClientRecord, OriginClient, RegistrationTokenRecord, SelfRegistration, UserRecord } from './store/store.ts'
// The store's roles: what an adapter implements, and what each part of macgate takes (roles.ts).
export type {
  AccountStore, ClientReader, ClientStore, CodeStore, ConsentStore, DeviceCodeStore, GrantIndex, HitCounters, NonceLog, NonceReports, Store, StoreLifecycle, TokenLookup, TokenStore
} from './store/store.ts'
export type { MacIdentity } from './mac/verify.ts'
export type { ClientOrigins, OriginClients } from './cors/client-origins.ts'
export { allowOrigin, allowPreflight, dropCorsHeaders, EXPOSED_HEADERS, isPreflight, requestedHeaders, varyOnOrigin } from './cors/headers.ts'
export { AuditEvents, type AuditEvent, type AuditEventMap, type AuditEventType } from './observe/events.ts'
export { Metrics, type VerificationOutcome } from './observe/metrics.ts'
export { HOST_DIFFERS, type MacAuthHook, type MacAuthOptions } from './mac/hook.ts'
export type { TokenCacheAnswer, VerifyObserver, VerifyWatch } from './mac/verify-observer.ts'
export { outcomeOf } from './mac/outcome.ts'
export type { RouteQuota } from './mac/quota.ts'
export { quotaCounterName, quotaWindow } from './mac/quota.ts'
export { grantAccessToken, grantCode } from './oauth/authorize-response.ts'
export { createRegistrationToken, listRegistrationTokens, REGISTRATION_TOKEN_DEFAULTS, revokeRegistrationToken, type NewRegistrationToken } from './operator/registration-tokens.ts'
export { REGISTRATION_PATH } from './developer/registration.ts'
export { NoSuchRecordError, RegistrationError } from './operator/refusals.ts'
export { newClientSchema, type ClientUpdate, type NewClient } from './operator/client-checks.ts'
export { clientWithoutSecrets, registerClient, removeClient, setClientOwner, updateClient } from './operator/clients.ts'
export { rotateClientSecret } from './operator/secrets.ts'
export { changePassword, createUser, removeUser, setDeveloper } from './operator/users.ts'
export { listUserGrants, revokeUserGrant } from './operator/user-grants.ts'
export type { UserGrant, Consent } from './store/store.ts'
export type { NonceStats, NonceUse } from './store/store.ts'
export type { DeviceCodeRecord, DeviceDecisionResult, DevicePoll, DevicePollState, DeviceRedeemResult, UserCodeTarget } from './store/store.ts'

declare module 'fastify' {
  interface FastifyInstance {
    macgate: MacgateContext
    /** The MAC verifier and its token cache, shared by every `macAuth` hook. */
    macVerifier: MacVerifier
    /** Which clients registered a browser origin, for CORS decisions (cached with Redis, `defaults.originCache`). */
    clientOrigins: ClientOrigins
    /** An `onRequest` hook admitting only MAC-signed requests with the given scopes. */
    macAuth (options?: MacAuthOptions): MacAuthHook
    /**
     * Takes the settings that can change while serving (`SWAPPABLE_SETTINGS`; a gateway's config
     * reload) and answers which of them changed. Every other setting is fixed at registration.
     */
    swapMacgateSettings (settings: SwappableSettings): string[]
  }
  interface FastifyRequest {
    /** Set by a `macAuth` hook once the request is verified. */
    macIdentity: MacIdentity | null
    /** Why a `macAuth` hook refused the request (the answer's description), for access logs. */
    macRejection: string | null
  }
}

/** The settings the plugin takes anew while serving: read per request, not built into a route. */
export const SWAPPABLE_SETTINGS = ['signedHosts', 'cors'] as const
export type SwappableSettings = Required<Pick<MacgateSettings, typeof SWAPPABLE_SETTINGS[number]>>

function swapSettings (config: MacgateContext, verifier: MacVerifier, next: SwappableSettings): string[] {
  const changed: string[] = []
  if (next.signedHosts.join() !== config.signedHosts.join()) {
    config.signedHosts = [...next.signedHosts]
    verifier.useSignedHosts(next.signedHosts)
    changed.push('signedHosts')
  }
  if (next.cors !== config.cors) {
    config.cors = next.cors
    changed.push('cors')
  }
  return changed
}

/**
 * The OAuth endpoints take forms only, parsed strictly: a bad escape is a 96002, not literal text,
 * and no JSON or text parser can hand a grant something other than strings (415 instead).
 */
function strictFormParser (fastify: FastifyInstance): void {
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_request, body, done) => {
    try {
      done(null, parseForm(body as string))
    } catch (error) {
      done(error as FastifyError)
    }
  })
}

/** The account host's pages: authorize, sign-in, consent. Every answer framed out and uncached. */
async function pages (fastify: FastifyInstance, config: MacgateContext): Promise<void> {
  await registerSessions(fastify, config)
  fastify.addHook('onSend', securityHeaders)
  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    const failure = toOAuthError(error)
    if (errors.internal.is(failure)) request.log.error({ err: error }, 'authorization page failed')
    return await sendErrorPage(reply, failure)
  })
  authorizeRoutes(fastify, config)
  signInRoutes(fastify, config)
  appsRoutes(fastify, config)
  if (config.developerConsole !== 'off') developerRoutes(fastify, config)
  // The device grant's page (RFC 8628), where the issuer's users type the code.
  if (config.issuer !== undefined) deviceVerificationRoutes(fastify, config)
}

/** Routes remembered for the developer console's use counts, at most this many (a config's routes). */
const MAX_QUOTA_ROUTES = 1000

function noteQuotaRoute ({ quotaRoutes }: MacgateContext, quota: RouteQuota | undefined): void {
  if (quota !== undefined && (quotaRoutes.has(quota.route) || quotaRoutes.size < MAX_QUOTA_ROUTES)) quotaRoutes.set(quota.route, quota.perMinute)
}

/** The store's part of the metrics: command latency, and what the revocation channel delivers. */
function observeStore ({ store, metrics }: MacgateContext): void {
  store.observeCommands?.((command, seconds, failed) => metrics.observeStoreCommand(command, seconds, failed))
  metrics.watchNonces(async () => await store.nonceStats())
  store.onRevocation((hashes) => {
    if (hashes === null) metrics.cacheFlushes.inc()
    else metrics.revocationsReceived.inc(hashes.length)
  }).catch(() => {}) // the verifier's own subscription (awaited above) reports an unreachable store
}

async function macgate (fastify: FastifyInstance, options: MacgateOptions): Promise<void> {
  const config = await resolveOptions(options)
  fastify.decorate('macgate', config)
  const quotas = new Quotas(config.store)
  const verifier = new MacVerifier(config.store, config.secret, { ...config, quotas })
  await verifier.cache.ready
  fastify.decorate('macVerifier', verifier)
  watchQuotaRefusals(quotas, config.metrics.registry, config.events)
  const origins = new ClientOrigins(config.store, config.corsOriginCacheMs)
  fastify.decorate('clientOrigins', origins)
  fastify.decorate('macAuth', (authOptions?: MacAuthOptions) => {
    noteQuotaRoute(config, authOptions?.quota)
    return macAuthHook(verifier, config.metrics.verifications, authOptions)
  })
  fastify.decorate('swapMacgateSettings', (next: SwappableSettings) => swapSettings(config, verifier, next))
  observeStore(config)
  config.metrics.watchTokenCache(verifier.cache)
  fastify.decorateRequest('pathAndQuery', null)
  fastify.decorateRequest('macIdentity', null)
  fastify.decorateRequest('macRejection', null)
  await fastify.register(async function oauthEndpoints (endpoints) {
    strictFormParser(endpoints)
    // Counted in the store itself: every instance together, and an outage is the store's 503.
    await endpoints.register(fastifyRateLimit, { global: false, store: rateLimitBackend(config.store) })
    await endpoints.register(async (context) => await pages(context, config))
    const cors = new TokenEndpointCors(origins)
    await endpoints.register(async (context) => { tokenRoutes(context, config, cors) })
    await endpoints.register(async (context) => { standardRoutes(context, config, cors) })
    await endpoints.register(async (context) => { standardTokenRoutes(context, config, cors) })
  })
  // JSON, not forms (RFC 7591): beside the form endpoints, with a parser of its own.
  await fastify.register(async (context) => { await registrationRoutes(context, config) })
}

export default fp(macgate, { fastify: '5.x', name: 'macgate' })
