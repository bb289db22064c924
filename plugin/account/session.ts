import { createHash } from 'node:crypto'
import fastifyCsrf from '@fastify/csrf-protection'
import fastifySecureSession from '@fastify/secure-session'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { MacgateConfig } from '../config/options.js'

/** Who a session speaks for. */
export interface SignedInUser {
  id: string
  username: string
}

declare module '@fastify/secure-session' {
  interface SessionData {
    user: SignedInUser
  }
}

/**
 * Sessions are encrypted cookies keyed from the server secret, so every gateway instance sharing
 * the store reads them without a session store. CSRF secrets live in the same session.
 */
export async function registerSessions (fastify: FastifyInstance, config: MacgateConfig): Promise<void> {
  const key = createHash('sha256').update('macgate session key\0').update(config.secret).digest()
  await fastify.register(fastifySecureSession, {
    key,
    cookieName: 'macgate_session',
    expiry: 24 * 3600,
    cookie: { path: '/oauth2', httpOnly: true, sameSite: 'lax', secure: config.secureCookies }
  })
  await fastify.register(fastifyCsrf, { sessionPlugin: '@fastify/secure-session' })
}

/** The signed-in user, when the session names one that still exists. */
export async function currentUser (config: MacgateConfig, request: FastifyRequest): Promise<SignedInUser | undefined> {
  const user = request.session.get('user')
  if (user === undefined) return undefined
  const stored = await config.store.getUserByName(user.username)
  return stored?.id === user.id ? user : undefined
}

/** Only the authorization endpoint is a place to return to after signing in: no open redirect. */
export function safeReturnTo (value: unknown): string | undefined {
  // Visible ASCII only: anything else could not be sent back in a Location header.
  return typeof value === 'string' && value.startsWith('/oauth2/authorize?') && /^[\x21-\x7e]+$/.test(value) ? value : undefined
}
