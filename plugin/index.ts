import fastifyRateLimit from '@fastify/rate-limit'
import type { FastifyError, FastifyInstance, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { errorPage } from './account/pages.js'
import { registerSessions } from './account/session.js'
import { signInRoutes } from './account/signin.js'
import { toOAuthError } from './errors.js'
import { resolveOptions, type MacgateConfig, type MacgateOptions } from './options.js'
import { authorizeRoutes } from './oauth/authorize.js'
import { parseForm } from './oauth/params.js'
import { tokenRoutes } from './oauth/token.js'
import { RedisStore } from './store/redis.js'
import { macAuthHook, type MacAuthOptions } from './mac/hook.js'
import { MacVerifier, type MacIdentity } from './mac/verify.js'

export type { MacgateOptions, MacgateConfig } from './options.js'
export { errors, OAuthError, isOAuthError } from './errors.js'
export { MemoryStore } from './store/memory.js'
export { RedisStore } from './store/redis.js'
export type { Store } from './store/store.js'
export type { MacIdentity, VerifierOptions } from './mac/verify.js'
export type { MacAuthOptions } from './mac/hook.js'
export { registerClient, createUser, RegistrationError } from './admin.js'
export { defaultScopes, ScopeRegistry, type ScopeDefinition } from './oauth/scope.js'

declare module 'fastify' {
  interface FastifyInstance {
    macgate: MacgateConfig
    /** The MAC verifier and its token cache, shared by every `macAuth` hook. */
    macVerifier: MacVerifier
    /** An `onRequest` hook admitting only MAC-signed requests with the given scopes. */
    macAuth (options?: MacAuthOptions): onRequestHookHandler
  }
  interface FastifyRequest {
    /** Set by a `macAuth` hook once the request is verified. */
    macIdentity: MacIdentity | null
  }
}

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
  'referrer-policy': 'no-referrer'
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
async function pages (fastify: FastifyInstance, config: MacgateConfig): Promise<void> {
  await registerSessions(fastify, config)
  fastify.addHook('onSend', async (_request, reply) => {
    reply.headers(SECURITY_HEADERS)
  })
  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    const failure = toOAuthError(error)
    if (failure.statusCode >= 500) request.log.error({ err: error }, 'authorization page failed')
    const text = failure.statusCode === 429 ? 'Too many attempts; wait a minute and try again.' : failure.message
    return reply.code(failure.statusCode).type('text/html; charset=utf-8').send(errorPage(failure.errno, text))
  })
  authorizeRoutes(fastify, config)
  signInRoutes(fastify, config)
}

async function macgate (fastify: FastifyInstance, options: MacgateOptions): Promise<void> {
  const config = await resolveOptions(options)
  fastify.decorate('macgate', config)
  const verifier = new MacVerifier(config.store, config.secret, options.mac)
  await verifier.cache.ready
  fastify.decorate('macVerifier', verifier)
  fastify.decorate('macAuth', (authOptions?: MacAuthOptions) => macAuthHook(verifier, authOptions))
  fastify.decorateRequest('macIdentity', null)
  await fastify.register(async function oauthEndpoints (endpoints) {
    strictFormParser(endpoints)
    const store = config.store
    await endpoints.register(fastifyRateLimit, {
      global: false,
      ...(store instanceof RedisStore && { redis: store.redis, nameSpace: `${store.prefix}ratelimit:` })
    })
    await endpoints.register(async (context) => pages(context, config))
    await endpoints.register(async (context) => tokenRoutes(context, config))
  })
}

export default fp(macgate, { fastify: '5.x', name: 'macgate' })
