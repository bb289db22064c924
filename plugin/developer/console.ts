import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { checkAllowedOrigins } from '../operator/client-checks.ts'
import { registerClient, removeClient } from '../operator/clients.ts'
import { RegistrationError } from '../operator/refusals.ts'
import { rotateClientSecret } from '../operator/secrets.ts'
import { ClientMetadataError, readClientMetadata, selfRegistrationOf } from './client-metadata.ts'
import { appPage, CONSOLE_PAGE, consolePage, deletePage, noSuchAppPage, notAllowedPage, registerPage, type AppForm, type DeveloperApp, type FormChoices } from '../account/developer-pages.ts'
import { currentUser, type SignedInUser } from '../account/session.ts'
import type { MacgateContext } from '../config/options.ts'
import { isClientId } from '../access/credentials.ts'
import { type Params } from '../http/params.ts'
import { sendPage } from '../http/replies.ts'
import { quotaCounterName, quotaWindow } from '../mac/quota.ts'
import type { ClientChanges, ClientRecord } from '../store/store.ts'

declare module '@fastify/secure-session' {
  interface SessionData {
    /** A secret just made for one of the user's apps, shown on its page once (the cookie is sealed). */
    newSecret: { clientId: string, secret: string }
    /** What the last console action did, shown once. */
    consoleNotice: string
  }
}

/** The rotation's grace choices, as the console offers them (the CLI's `--grace` takes any). */
const GRACE_SECONDS = new Set([0, 3600, 86_400, 604_800])

function lines (value: string | string[] | undefined): string[] {
  const text = Array.isArray(value) ? value.join('\n') : value ?? ''
  return [...new Set(text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== ''))]
}

function many (value: string | string[] | undefined): string[] {
  return value === undefined ? [] : [value].flat()
}

function text (value: string | string[] | undefined): string {
  return typeof value === 'string' ? value : ''
}

/** The form as submitted, to show again with an error. */
function formOf (body: Params, isPublic: boolean): AppForm {
  return {
    name: text(body.name),
    isPublic,
    redirectUris: lines(body.redirect_uris).join('\n'),
    allowedOrigins: lines(body.allowed_origins).join('\n'),
    scopes: many(body.scope),
    grantTypes: many(body.grant_types)
  }
}

function formOfClient (client: ClientRecord): AppForm {
  return {
    name: client.name,
    isPublic: client.public === true,
    redirectUris: client.redirectUris.join('\n'),
    allowedOrigins: (client.allowedOrigins ?? []).join('\n'),
    scopes: client.scopes,
    grantTypes: client.grantTypes
  }
}

/**
 * The developer console at `/oauth2/developer`, beside the account pages (the session cookie's
 * path), when the deployment's `developerConsole` is not `off`. Who may: a signed-in user, and in
 * `developers` mode only one an operator marked (`users update NAME --developer`); `everyone` is
 * allowed only with registration `open` (config/options.ts), so the console never gets round the
 * `token` gate. Every request, in order: not signed in, to the sign-in page and back; not allowed,
 * 403; an app id that is not one of the user's own (another's, or none), 404 (the same page, so
 * ids do not leak); every POST CSRF-checked before its handler.
 *
 * What an app may be is the registration endpoint's rule (`readClientMetadata` against the
 * deployment's `registration` bounds), the allowed origins the operator's (`checkAllowedOrigins`);
 * a console app is marked self-registered (via `console`: unverified on the consent page) and owned
 * by the user (`ownerId`), at most `developerAppLimit` of them. Deleting revokes as `clients remove`.
 */
export function developerRoutes (fastify: FastifyInstance, config: MacgateContext): void {
  const { store, registration: policy } = config
  const choices: FormChoices = {
    scopes: policy.scopes.map((id) => ({ id, description: config.registry.describe(id) })),
    // refresh_token comes with the grants that issue one: not a choice of its own.
    grantTypes: policy.grantTypes.filter((type) => type !== 'refresh_token')
  }

  /** The signed-in user allowed to develop, or the answer already sent. */
  async function developer (request: FastifyRequest, reply: FastifyReply): Promise<SignedInUser | undefined> {
    const user = await currentUser(config, request)
    if (user === undefined) {
      await reply.redirect(`/oauth2/signin?${new URLSearchParams({ return_to: CONSOLE_PAGE }).toString()}`, request.method === 'GET' ? 302 : 303)
      return undefined
    }
    if (config.developerConsole === 'everyone') return user
    const record = await store.getUserByName(user.username)
    if (record?.id === user.id && record.developer === true) return user
    await sendPage(reply, notAllowedPage(user.username), 403)
    return undefined
  }

  async function ownedApps (userId: string): Promise<ClientRecord[]> {
    return (await store.listClients()).filter((client) => client.ownerId === userId).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
  }

  /** The user's own app by the URL's id; otherwise the 404 page is sent. */
  async function ownApp (request: FastifyRequest<{ Params: { clientId: string } }>, reply: FastifyReply, user: SignedInUser): Promise<ClientRecord | undefined> {
    const { clientId } = request.params
    const client = isClientId(clientId) ? await store.getClient(clientId) : undefined
    if (client !== undefined && client.ownerId === user.id) return client
    await sendPage(reply, noSuchAppPage(), 404)
    return undefined
  }

  async function view (client: ClientRecord): Promise<DeveloperApp> {
    const routes = [...config.quotaRoutes]
    const used = routes.length === 0 ? [] : await store.quotaUsed(routes.map(([route]) => quotaCounterName(client.id, route)), quotaWindow(config.clock()))
    return {
      id: client.id,
      name: client.name,
      isPublic: client.public === true,
      redirectUris: client.redirectUris,
      allowedOrigins: client.allowedOrigins ?? [],
      scopes: client.scopes,
      grantTypes: client.grantTypes,
      ...(client.quotaPerMinute !== undefined && { quotaPerMinute: client.quotaPerMinute }),
      quotas: routes.map(([route, perMinute], index) => ({ route, perMinute: client.quotaPerMinute ?? perMinute, used: used[index] ?? 0 })),
      users: await store.countConsents(client.id),
      createdAt: client.createdAt
    }
  }

  /** The form read as the registration endpoint reads a registration, and its allowed origins checked as an operator's. */
  function metadataOf (body: Params, isPublic: boolean): { metadata: ReturnType<typeof readClientMetadata>, allowedOrigins: string[] } {
    const name = text(body.name).trim()
    if (name === '') throw new RegistrationError('the app needs a name')
    const metadata = readClientMetadata({
      client_name: name,
      redirect_uris: lines(body.redirect_uris),
      token_endpoint_auth_method: isPublic ? 'none' : 'client_secret_basic',
      grant_types: many(body.grant_types),
      scope: many(body.scope).join(' ')
    }, policy)
    const allowedOrigins = lines(body.allowed_origins)
    checkAllowedOrigins(allowedOrigins)
    return { metadata, allowedOrigins }
  }

  /** A refusal the developer can fix: its message; anything else is thrown on. */
  function problemOf (error: unknown): string {
    if (error instanceof ClientMetadataError || error instanceof RegistrationError) return error.message
    throw error
  }

  function takeNotice (request: FastifyRequest): string | undefined {
    const notice = request.session.get('consoleNotice')
    if (notice !== undefined) request.session.set('consoleNotice', undefined)
    return notice
  }

  fastify.get(CONSOLE_PAGE, async (request, reply) => {
    const user = await developer(request, reply)
    if (user === undefined) return reply
    const apps = await Promise.all((await ownedApps(user.id)).map(view))
    const notice = takeNotice(request)
    return await sendPage(reply, consolePage({ username: user.username, apps, limit: config.developerAppLimit, ...(notice !== undefined && { notice }) }))
  })

  fastify.get(`${CONSOLE_PAGE}/new`, async (request, reply) => {
    if (await developer(request, reply) === undefined) return reply
    const form: AppForm = { name: '', isPublic: false, redirectUris: '', allowedOrigins: '', scopes: [...policy.scopes], grantTypes: ['authorization_code'] }
    return await sendPage(reply, registerPage({ csrf: reply.generateCsrf(), form, choices }))
  })

  fastify.post(`${CONSOLE_PAGE}/apps`, { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const user = await developer(request, reply)
    if (user === undefined) return reply
    const body = (request.body ?? {}) as Params
    const isPublic = body.type === 'public'
    const again = async (error: string, status = 400): Promise<FastifyReply> => await sendPage(reply, registerPage({ csrf: reply.generateCsrf(), form: formOf(body, isPublic), choices, error }), status)
    if ((await ownedApps(user.id)).length >= config.developerAppLimit) return await again(`You own ${config.developerAppLimit} apps, the most allowed here: delete one to register another.`, 409)
    let registered: Awaited<ReturnType<typeof registerClient>>
    try {
      const { metadata, allowedOrigins } = metadataOf(body, isPublic)
      registered = await registerClient(store, config.registry, {
        name: metadata.name,
        redirectUris: metadata.redirectUris,
        scope: metadata.scopes.join(' '),
        grantTypes: metadata.grantTypes,
        public: isPublic,
        allowedOrigins,
        ...(policy.defaultQuotaPerMinute !== undefined && { quotaPerMinute: policy.defaultQuotaPerMinute }),
        selfRegistration: selfRegistrationOf(metadata, { via: 'console' }),
        ownerId: user.id
      }, undefined, config.clock)
    } catch (error) {
      return await again(problemOf(error))
    }
    const { client, clientSecret } = registered
    config.events.record('client.registered', { clientId: client.id, name: client.name, by: 'console', userId: user.id, ip: request.ip })
    if (clientSecret !== undefined) request.session.set('newSecret', { clientId: client.id, secret: clientSecret })
    request.session.set('consoleNotice', `Registered ${client.name}.`)
    return await reply.redirect(`${CONSOLE_PAGE}/apps/${client.id}`, 303)
  })

  fastify.get<{ Params: { clientId: string } }>(`${CONSOLE_PAGE}/apps/:clientId`, async (request, reply) => {
    const user = await developer(request, reply)
    if (user === undefined) return reply
    const client = await ownApp(request, reply, user)
    if (client === undefined) return reply
    // The secret, once: taken out of the session as it is shown.
    const fresh = request.session.get('newSecret')
    const secret = fresh?.clientId === client.id ? fresh.secret : undefined
    if (secret !== undefined) request.session.set('newSecret', undefined)
    const notice = takeNotice(request)
    return await sendPage(reply, appPage({ csrf: reply.generateCsrf(), app: await view(client), form: formOfClient(client), choices, ...(secret !== undefined && { secret }), ...(notice !== undefined && { notice }) }))
  })

  fastify.post<{ Params: { clientId: string } }>(`${CONSOLE_PAGE}/apps/:clientId`, { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const user = await developer(request, reply)
    if (user === undefined) return reply
    const client = await ownApp(request, reply, user)
    if (client === undefined) return reply
    const body = (request.body ?? {}) as Params
    const isPublic = client.public === true
    let changes: ClientChanges
    try {
      const { metadata, allowedOrigins } = metadataOf(body, isPublic)
      changes = {
        name: metadata.name,
        redirectUris: metadata.redirectUris,
        allowedOrigins,
        scopes: metadata.scopes,
        grantTypes: metadata.grantTypes,
        responseTypes: metadata.responseTypes,
        selfRegistration: selfRegistrationOf(metadata, client.selfRegistration ?? { via: 'console' })
      }
    } catch (error) {
      const page = appPage({ csrf: reply.generateCsrf(), app: await view(client), form: formOf(body, isPublic), choices, error: problemOf(error) })
      return await sendPage(reply, page, 400)
    }
    const updated = await store.updateClient(client.id, changes)
    if (updated === undefined) return await sendPage(reply, noSuchAppPage(), 404)
    config.events.record('client.updated', { clientId: client.id, fields: Object.keys(changes), by: 'console', userId: user.id, ip: request.ip })
    request.session.set('consoleNotice', 'Saved.')
    return await reply.redirect(`${CONSOLE_PAGE}/apps/${client.id}`, 303)
  })

  fastify.post<{ Params: { clientId: string } }>(`${CONSOLE_PAGE}/apps/:clientId/rotate`, { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const user = await developer(request, reply)
    if (user === undefined) return reply
    const client = await ownApp(request, reply, user)
    if (client === undefined) return reply
    const grace = Number(text(((request.body ?? {}) as Params).grace))
    if (client.public === true || !GRACE_SECONDS.has(grace)) {
      const page = appPage({ csrf: reply.generateCsrf(), app: await view(client), form: formOfClient(client), choices, error: client.public === true ? 'A public app has no secret.' : 'Choose how long the current secret keeps working.' })
      return await sendPage(reply, page, 400)
    }
    const { clientSecret } = await rotateClientSecret(store, client.id, grace, undefined, config.clock)
    config.events.record('client.secret_rotated', { clientId: client.id, graceSeconds: grace, by: 'console', userId: user.id, ip: request.ip })
    request.session.set('newSecret', { clientId: client.id, secret: clientSecret })
    request.session.set('consoleNotice', grace === 0 ? 'New secret made; the old one no longer works.' : 'New secret made; the old one keeps working for the time you chose.')
    return await reply.redirect(`${CONSOLE_PAGE}/apps/${client.id}`, 303)
  })

  fastify.get<{ Params: { clientId: string } }>(`${CONSOLE_PAGE}/apps/:clientId/delete`, async (request, reply) => {
    const user = await developer(request, reply)
    if (user === undefined) return reply
    const client = await ownApp(request, reply, user)
    if (client === undefined) return reply
    return await sendPage(reply, deletePage(reply.generateCsrf(), await view(client)))
  })

  fastify.post<{ Params: { clientId: string } }>(`${CONSOLE_PAGE}/apps/:clientId/delete`, { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const user = await developer(request, reply)
    if (user === undefined) return reply
    const client = await ownApp(request, reply, user)
    if (client === undefined) return reply
    // As `clients remove`: every grant of the app revoked, on every instance.
    await removeClient(store, client.id)
    config.events.record('client.removed', { clientId: client.id, by: 'console', userId: user.id, ip: request.ip })
    request.session.set('consoleNotice', `Deleted ${client.name}.`)
    return await reply.redirect(CONSOLE_PAGE, 303)
  })
}
