import { randomBytes, timingSafeEqual } from 'node:crypto'
import fastifyCookie from '@fastify/cookie'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { parseTokenResponse, signRequest } from '../../../plugin/client/index.ts'
import { securityHeaders, sendPage } from '../../../plugin/index.ts'
import { alreadyCompletedPage, callbackPage, demoPage, demoErrorPage } from './pages.ts'

/** A registered client the demo plays: the service's own example of a client app. */
export interface DemoClient {
  clientId: string
  clientSecret: string
  redirectUri: string
}

const STATE_COOKIE = 'macgate_demo_state'
// The state of the last callback this browser completed: a reload of that page is told so, not
// blamed for a mismatch. Kept in the browser, so that any worker can tell.
const DONE_COOKIE = 'macgate_demo_done'
// Secure whenever the demo is served over TLS (request.protocol).
const COOKIE = { path: '/demo', httpOnly: true, sameSite: 'lax', maxAge: 600, secure: 'auto' } as const

/** One state, equal to the cookie's, compared in constant time over bytes (not characters). */
function sameState (given: unknown, expected: string | undefined): boolean {
  if (typeof given !== 'string' || expected === undefined) return false
  const [a, b] = [Buffer.from(given), Buffer.from(expected)]
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * /demo: the client app's part, played by the gateway itself. It sends the browser through
 * authorize, takes the code at /demo/callback, exchanges it server-side and makes signed calls.
 */
export async function registerDemo (app: FastifyInstance, demo: DemoClient | undefined): Promise<void> {
  await app.register(async function demoRoutes (context) {
    await context.register(fastifyCookie)
    context.addHook('onSend', securityHeaders)

    context.get('/demo', async (_request, reply) => await sendPage(reply, demoPage(demo !== undefined)))

    context.get('/demo/start', async (_request, reply) => {
      if (demo === undefined) return await sendPage(reply, demoErrorPage('The demo client is not configured.'), 404)
      const state = randomBytes(16).toString('base64url')
      reply.setCookie(STATE_COOKIE, state, COOKIE)
      const query = new URLSearchParams({ client_id: demo.clientId, redirect_uri: demo.redirectUri, response_type: 'code', scope: '1 3 4 6', state })
      return await reply.redirect(`/oauth2/authorize?${query.toString()}`, 302)
    })

    context.get('/demo/callback', async (request: FastifyRequest<{ Querystring: Record<string, string> }>, reply) => {
      if (demo === undefined) return await sendPage(reply, demoErrorPage('The demo client is not configured.'), 404)
      const { code, state, error, error_description: description } = request.query
      reply.clearCookie(STATE_COOKIE, { path: '/demo' })
      if (!sameState(state, request.cookies[STATE_COOKIE])) {
        if (sameState(state, request.cookies[DONE_COOKIE])) return await sendPage(reply, alreadyCompletedPage())
        return await sendPage(reply, demoErrorPage('The state does not match: this callback was not started here.'), 400)
      }
      reply.setCookie(DONE_COOKIE, state as string, COOKIE)
      if (error !== undefined) return await sendPage(reply, demoErrorPage(`The authorization ended with error ${error}: ${description ?? ''}`))

      // The client's server exchanges the code with its secret (contract section 4).
      const exchange = await app.inject({
        method: 'GET',
        url: `/oauth2/token?${new URLSearchParams({ client_id: demo.clientId, client_secret: demo.clientSecret, redirect_uri: demo.redirectUri, grant_type: 'authorization_code', code: code ?? '' }).toString()}`
      })
      let tokens
      try {
        tokens = parseTokenResponse(exchange.body)
      } catch (failure) {
        return await sendPage(reply, demoErrorPage(`The code exchange failed: ${(failure as Error).message}`))
      }
      // Then a MAC-signed call to the open API, as a client app makes it.
      const host = request.headers.host ?? '127.0.0.1'
      const calls = []
      for (const path of ['/user/profile', '/user/phoneAndEmail']) {
        const authorization = signRequest({ method: 'GET', url: `http://${host}${path}`, accessToken: tokens.access_token, macKey: tokens.mac_key })
        const answer = await app.inject({ method: 'GET', url: path, headers: { host, authorization } })
        calls.push({ path, authorization, status: answer.statusCode, body: answer.body })
      }
      return await sendPage(reply, callbackPage({ tokenBody: exchange.body, tokens, calls }))
    })
  })
}
