import type { FastifyInstance, FastifyReply } from 'fastify'
import type { MacgateContext } from '../config/options.ts'
import { errors } from '../http/errors.ts'
import { single, type Params } from '../http/params.ts'
import { sendPage } from '../http/replies.ts'
import { appsPage, type AuthorizedApp } from './apps-page.ts'
import { removeAppAccess } from './authorized-apps.ts'
import { APPS_PAGE, currentUser } from './session.ts'

const CLIENT_ID = /^[0-9]{1,32}$/

/**
 * `/oauth2/account/apps` (`/account/apps` redirects there): the signed-in user's authorized apps, and "Remove access" (a CSRF-protected
 * POST) which forgets the consent and revokes every grant of theirs for the app, announced to
 * every instance like any revocation. Not signed in: to the sign-in page, and back here.
 */
export function appsRoutes (fastify: FastifyInstance, config: MacgateContext): void {
  const { store, registry } = config
  const toSignIn = (reply: FastifyReply, status: 302 | 303) => reply.redirect(`/oauth2/signin?${new URLSearchParams({ return_to: APPS_PAGE }).toString()}`, status)

  /**
   * The apps: every client the user consented to, and any client that still holds a grant of theirs
   * (a removal the store failed half-way through); clients removed since are left out.
   */
  async function authorizedApps (userId: string): Promise<AuthorizedApp[]> {
    const consents = await store.listConsents(userId)
    const consented = new Set(consents.map(({ clientId }) => clientId))
    const halfRemoved = [...new Set((await store.listUserGrants(userId)).map(({ clientId }) => clientId))].filter((clientId) => !consented.has(clientId))
    const entries = [...consents, ...halfRemoved.map((clientId) => ({ clientId, scopes: [] as string[], grantedAt: undefined }))]
    const apps = await Promise.all(entries.map(async ({ clientId, scopes, grantedAt }) => {
      const client = await store.getClient(clientId)
      return client === undefined ? undefined : { clientId, name: client.name, permissions: scopes.map((id) => registry.describe(id)), grantedAt }
    }))
    return apps.filter((app): app is AuthorizedApp => app !== undefined)
  }

  fastify.get(APPS_PAGE, async (request, reply) => {
    const user = await currentUser(config, request)
    if (user === undefined) return toSignIn(reply, 302)
    const apps = await authorizedApps(user.id)
    // Set by this session's own removal, shown once: no link can make this page claim a removal.
    const removed = request.session.get('removedApp')
    request.session.set('removedApp', undefined)
    const notice = removed === undefined ? undefined : `Access removed for ${removed}. It must ask you again before it can act for you.`
    return await sendPage(reply, appsPage({ csrf: reply.generateCsrf(), username: user.username, apps, ...(notice !== undefined && { notice }) }))
  })

  // The path the issue and the links name; the page itself lives where the session cookie goes.
  fastify.get('/account/apps', async (_request, reply) => await reply.redirect(APPS_PAGE, 302))

  fastify.post(`${APPS_PAGE}/remove`, { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const user = await currentUser(config, request)
    if (user === undefined) return toSignIn(reply, 303)
    const clientId = single((request.body ?? {}) as Params, 'client_id')
    if (clientId === undefined || !CLIENT_ID.test(clientId)) throw errors.invalidRequest('client_id is missing or malformed')
    const { consented, grants } = await removeAppAccess(store, user.id, clientId)
    if (consented || grants > 0) {
      config.events.record('consent.revoked', { clientId, userId: user.id, grants })
      request.session.set('removedApp', (await store.getClient(clientId))?.name ?? 'the app')
    }
    return await reply.redirect(APPS_PAGE, 303)
  })
}
