import type { FastifyInstance } from 'fastify'
import type { MacgateConfig } from '../options.js'
import { single, type Params } from '../oauth/params.js'
import { verifyPassword } from './password.js'
import { signedInPage, signInPage } from './pages.js'
import { safeReturnTo } from './session.js'

/** GET shows the sign-in form; POST checks the password, then returns to the authorization. */
export function signInRoutes (fastify: FastifyInstance, config: MacgateConfig): void {
  fastify.get('/oauth2/signin', async (request, reply) => {
    const returnTo = safeReturnTo((request.query as Params).return_to) ?? ''
    return await reply.type('text/html; charset=utf-8').send(signInPage({ csrf: reply.generateCsrf(), returnTo }))
  })

  fastify.post('/oauth2/signin', {
    preHandler: fastify.csrfProtection,
    config: { rateLimit: { max: config.signInRateLimit, timeWindow: 60_000 } }
  }, async (request, reply) => {
    const body = (request.body ?? {}) as Params
    const username = single(body, 'username') ?? ''
    const password = single(body, 'password') ?? ''
    const returnTo = safeReturnTo(body.return_to)
    const user = username === '' ? undefined : await config.store.getUserByName(username)
    if (!await verifyPassword(password, user?.passwordHash) || user === undefined) {
      request.log.info({ event: 'sign-in failed' }, 'sign-in failed')
      const page = signInPage({ csrf: reply.generateCsrf(), returnTo: returnTo ?? '', error: 'Wrong username or password.', username })
      return await reply.code(401).type('text/html; charset=utf-8').send(page)
    }
    // A new session at sign-in, so that a session planted before it is worth nothing.
    request.session.regenerate()
    request.session.set('user', { id: user.id, username: user.username })
    if (returnTo === undefined) return await reply.type('text/html; charset=utf-8').send(signedInPage(user.username))
    return await reply.redirect(returnTo, 303)
  })

  fastify.post('/oauth2/signout', { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const returnTo = safeReturnTo(((request.body ?? {}) as Params).return_to)
    request.session.delete()
    const signIn = returnTo === undefined ? '/oauth2/signin' : `/oauth2/signin?${new URLSearchParams({ return_to: returnTo }).toString()}`
    return await reply.redirect(signIn, 303)
  })
}
