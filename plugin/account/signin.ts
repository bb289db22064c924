import type { FastifyInstance } from 'fastify'
import { sendPage } from '../http/replies.ts'
import type { MacgateContext } from '../config/options.ts'
import { queryOf, single, type Params } from '../http/params.ts'
import { isClientId } from '../access/credentials.ts'
import { decoyHash, verifyPassword } from './password.ts'
import { signedInPage, signInPage } from './pages.ts'
import { endSession, safeReturnTo, startSession } from './session.ts'

/** The registered app a sign-in continues to, named by its return_to's client_id; else none. */
async function appNameOf (config: MacgateContext, returnTo: string | undefined): Promise<string | undefined> {
  let clientId: string | undefined
  try {
    clientId = returnTo === undefined ? undefined : single(queryOf(returnTo), 'client_id')
  } catch {} // a malformed return_to names no app; the authorization will say what is wrong with it
  if (clientId === undefined || !isClientId(clientId)) return undefined
  return (await config.store.getClient(clientId))?.name
}

/** GET shows the sign-in form; POST checks the password, then returns to the authorization. */
export function signInRoutes (fastify: FastifyInstance, config: MacgateContext): void {
  void decoyHash() // made now, not on the first unknown name
  fastify.get('/oauth2/signin', async (request, reply) => {
    const returnTo = safeReturnTo((request.query as Params).return_to)
    const appName = await appNameOf(config, returnTo)
    return await sendPage(reply, signInPage({ csrf: reply.generateCsrf(), returnTo: returnTo ?? '', appName }))
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
      // The name as typed, bounded: a password typed into it is the user's to see, not an attacker's to flood.
      config.events.record('signin.failed', { username: username.slice(0, 64), ip: request.ip, reason: 'bad credentials' })
      const appName = await appNameOf(config, returnTo)
      const page = signInPage({ csrf: reply.generateCsrf(), returnTo: returnTo ?? '', appName, error: 'Wrong username or password.', username })
      return await sendPage(reply, page, 401)
    }
    await startSession(config, request, { id: user.id, username: user.username })
    if (returnTo === undefined) return await sendPage(reply, signedInPage(user.username))
    return await reply.redirect(returnTo, 303)
  })

  fastify.post('/oauth2/signout', { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const returnTo = safeReturnTo(((request.body ?? {}) as Params).return_to)
    await endSession(config, request)
    const signIn = returnTo === undefined ? '/oauth2/signin' : `/oauth2/signin?${new URLSearchParams({ return_to: returnTo }).toString()}`
    return await reply.redirect(signIn, 303)
  })
}
