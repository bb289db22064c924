import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { confirmPage } from '../account/pages.ts'
import type { MacgateContext } from '../config/options.ts'
import { errors } from '../http/errors.ts'
import { errorPage } from '../http/html.ts'
import { sendPage } from '../http/replies.ts'
import { currentUser, type SignedInUser } from '../account/session.ts'
import { NoRedirectError, readAuthorizationRequest, RedirectError, type AuthorizationRequest } from './authorize-request.ts'
import { issueAuthorization } from './authorize-response.ts'
import { parseForm, single, type Params } from '../http/params.ts'
import { pathAndQuery } from '../http/path-and-query.ts'
import { withQuery } from './redirect-uri.ts'

/**
 * Sends an authorization failure where the contract says: a page, or back to the client. Anything
 * else (a store outage, a fault) goes on to the pages' error handler.
 */
async function replyAuthorizeError (config: MacgateContext, reply: FastifyReply, error: unknown, status: 302 | 303): Promise<FastifyReply> {
  const outcome = error instanceof RedirectError && error.error.kind === 'accessDenied' ? 'denied' : error instanceof NoRedirectError || error instanceof RedirectError ? 'refused' : 'failed'
  config.metrics.authorizations.labels(outcome).inc()
  if (error instanceof NoRedirectError) {
    // Contract §3: 400, whichever the error (an unknown client's 96001 is 401 at the token endpoint).
    return await sendPage(reply, errorPage(error.error), 400)
  }
  if (error instanceof RedirectError) {
    const params: Record<string, string> = { error: String(error.error.errno), error_description: error.error.message }
    if (error.state !== undefined) params.state = error.state
    return await reply.redirect(withQuery(error.redirectUri, params), status)
  }
  throw error
}

function signInRedirect (request: FastifyRequest): string {
  return `/oauth2/signin?${new URLSearchParams({ return_to: request.url }).toString()}`
}

/** GET /oauth2/authorize, and the POST of the confirmation page's decision. */
export function authorizeRoutes (fastify: FastifyInstance, config: MacgateContext): void {
  const { store, registry } = config

  async function showConfirmation (request: FastifyRequest, reply: FastifyReply, authz: AuthorizationRequest, username: string): Promise<FastifyReply> {
    const page = confirmPage({
      csrf: reply.generateCsrf(),
      username,
      appName: authz.client.name,
      unverified: authz.client.selfRegistration !== undefined,
      permissions: authz.scope.map((id) => registry.describe(id)),
      action: request.url
    })
    config.metrics.authorizations.labels('consent_shown').inc()
    return await sendPage(reply, page)
  }

  async function issue (reply: FastifyReply, authz: AuthorizationRequest, user: SignedInUser, status: 302 | 303): Promise<FastifyReply> {
    const location = await issueAuthorization(config, authz, user)
    config.metrics.authorizations.labels('issued').inc()
    return await reply.redirect(location, status)
  }

  function toSignIn (request: FastifyRequest, reply: FastifyReply, status: 302 | 303): FastifyReply {
    config.metrics.authorizations.labels('sign_in').inc()
    return reply.redirect(signInRedirect(request), status)
  }

  // No HEAD: it would run this handler and could issue a code nobody receives.
  fastify.get('/oauth2/authorize', { exposeHeadRoute: false }, async (request, reply) => {
    try {
      const authz = await readAuthorizationRequest(config, parseForm(pathAndQuery(request).query))
      const user = await currentUser(config, request)
      if (user === undefined) return toSignIn(request, reply, 302)
      if (authz.skipConfirm) {
        const granted = await store.getConsent(user.id, authz.client.id)
        if (authz.scope.every((scope) => granted.includes(scope))) {
          return await issue(reply, authz, user, 302)
        }
      }
      return await showConfirmation(request, reply, authz, user.username)
    } catch (error) {
      return await replyAuthorizeError(config, reply, error, 302)
    }
  })

  fastify.post('/oauth2/authorize', { preHandler: fastify.csrfProtection }, async (request, reply) => {
    try {
      const authz = await readAuthorizationRequest(config, parseForm(pathAndQuery(request).query))
      const user = await currentUser(config, request)
      if (user === undefined) return toSignIn(request, reply, 303)
      const decision = single((request.body ?? {}) as Params, 'decision')
      if (decision === 'deny') {
        config.events.record('consent.denied', { clientId: authz.client.id, userId: user.id })
        throw new RedirectError(errors.accessDenied('the user denied access'), authz.redirectUri, authz.state)
      }
      if (decision !== 'allow') throw new RedirectError(errors.invalidRequest('decision must be allow or deny'), authz.redirectUri, authz.state)
      await store.addConsent(user.id, authz.client.id, authz.scope)
      config.events.record('consent.given', { clientId: authz.client.id, userId: user.id, scope: authz.scope })
      return await issue(reply, authz, user, 303)
    } catch (error) {
      return await replyAuthorizeError(config, reply, error, 303)
    }
  })
}
