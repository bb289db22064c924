import { createHash } from 'node:crypto'
import { hashSecret, randomBase64Url } from '../access/credentials.ts'
import fastifyCsrf from '@fastify/csrf-protection'
import fastifySecureSession from '@fastify/secure-session'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { MacgateContext } from '../config/options.ts'

/** The user's apps page: under /oauth2, the only path the session cookie is sent to (never to the open API). */
export const APPS_PAGE = '/oauth2/account/apps'

/** Who a session speaks for. */
export interface SignedInUser {
  id: string
  username: string
}

/** What the cookie carries: which session, and whose (the store's record is found by both). */
interface SessionPointer {
  id: string
  userId: string
}

declare module '@fastify/secure-session' {
  interface SessionData {
    signedIn: SessionPointer
    /** The app whose access was just removed, for the apps page's notice (shown once). */
    removedApp: string
  }
}

const SESSION_SECONDS = 24 * 3600

/**
 * The cookie is sealed under a key derived from the server secret and carries the CSRF secret and
 * a session id; the session itself is a record in the store (only the id's hash), so that sign-out,
 * removing the user or changing the password ends it on every instance at once.
 */
export async function registerSessions (fastify: FastifyInstance, config: MacgateContext): Promise<void> {
  const key = createHash('sha256').update('macgate session key\0').update(config.secret).digest()
  await fastify.register(fastifySecureSession, {
    key,
    cookieName: 'macgate_session',
    expiry: SESSION_SECONDS,
    // 'auto': Secure whenever the request came over HTTPS, as Fastify reads it (a TLS socket, or
    // X-Forwarded-Proto from a trusted proxy, never from anyone else), so that a gateway serving
    // TLS needs no setting; secureCookies makes it Secure over plain HTTP too.
    cookie: { path: '/oauth2', httpOnly: true, sameSite: 'lax', secure: config.secureCookies ? true : 'auto' }
  })
  await fastify.register(fastifyCsrf, { sessionPlugin: '@fastify/secure-session' })
}

/** Starts a session for the user: a fresh cookie (so that one planted before is worth nothing). */
export async function startSession (config: MacgateContext, request: FastifyRequest, user: SignedInUser): Promise<void> {
  const id = randomBase64Url(32)
  await config.store.saveSession(hashSecret(id), { userId: user.id, username: user.username, expiresAt: config.clock() + SESSION_SECONDS * 1000 })
  request.session.regenerate()
  request.session.set('signedIn', { id, userId: user.id })
}

/** Ends the request's session in the store and in the browser. */
export async function endSession (config: MacgateContext, request: FastifyRequest): Promise<void> {
  const pointer = request.session.get('signedIn')
  if (pointer !== undefined) await config.store.endSessions(pointer.userId, hashSecret(pointer.id))
  request.session.delete()
}

/** The signed-in user, while the store still holds the session the cookie names. */
export async function currentUser (config: MacgateContext, request: FastifyRequest): Promise<SignedInUser | undefined> {
  const pointer = request.session.get('signedIn')
  if (pointer === undefined || typeof pointer.id !== 'string' || typeof pointer.userId !== 'string') return undefined
  const session = await config.store.getSession(hashSecret(pointer.id), pointer.userId)
  if (session === undefined || session.expiresAt <= config.clock()) return undefined
  return { id: session.userId, username: session.username }
}

/** The authorization endpoint, the device page, the apps page and the developer console are the only places to return to after signing in: no open redirect. */
export function safeReturnTo (value: unknown): string | undefined {
  if (value === APPS_PAGE || value === '/oauth2/device' || value === '/oauth2/developer') return value
  if (typeof value === 'string' && /^\/oauth2\/device\?user_code=[A-Za-z-]{1,20}$/.test(value)) return value
  // Visible ASCII only: anything else could not be sent back in a Location header.
  return typeof value === 'string' && value.startsWith('/oauth2/authorize?') && /^[\x21-\x7e]+$/.test(value) ? value : undefined
}
