import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { codeEntryPage, deviceConfirmPage, deviceDonePage } from '../../account/device-pages.ts'
import { currentUser, type SignedInUser } from '../../account/session.ts'
import type { MacgateContext } from '../../config/options.ts'
import { hashSecret } from '../../access/credentials.ts'
import { errors } from '../../http/errors.ts'
import { single, type Params } from '../../http/params.ts'
import { sendPage } from '../../http/replies.ts'
import type { ClientRecord, DeviceCodeRecord, UserCodeTarget } from '../../store/store.ts'
import { VERIFICATION_PATH } from './authorization-endpoint.ts'
import { UserCodeGuessLimit } from './guess-limit.ts'
import { displayUserCode, normalUserCode, userCodeHash } from './user-code.ts'

const WRONG_CODE = 'That code is not valid, or it has expired or been used. Check the code on your device.'

/** A code the user may still decide on: live, pending, of a client that still exists. */
interface Pending {
  code: string
  hash: string
  target: UserCodeTarget
  record: DeviceCodeRecord
  client: ClientRecord
}

function signInRedirect (returnTo: string): string {
  return `/oauth2/signin?${new URLSearchParams({ return_to: returnTo }).toString()}`
}

/**
 * The verification page, /oauth2/device (RFC 8628 §3.3), on the account pages' sessions and CSRF.
 * GET: the code entry, prefilled from `verification_uri_complete` (a link alone never decides: the
 * user confirms the code, then the app). POST with `user_code`: the app's name and permissions in
 * the consent page's words, with §5.4's warning; POST with `decision` too: the decision, once.
 * Every code the user enters, at either step, is checked against the guess limits first; a wrong
 * one counts. Signed out: to the sign-in, and back here with the code.
 */
export function deviceVerificationRoutes (fastify: FastifyInstance, config: MacgateContext): void {
  const { store, registry } = config

  async function entry (reply: FastifyReply, user: SignedInUser, userCode: string, error?: string, status = 200): Promise<FastifyReply> {
    return await sendPage(reply, codeEntryPage({ csrf: reply.generateCsrf(), username: user.username, userCode, ...(error !== undefined && { error }) }), status)
  }

  /** The pending code the user typed, or undefined (counted as a wrong guess). Throws 429 past a limit. */
  async function pendingCode (request: FastifyRequest, typed: string): Promise<Pending | undefined> {
    // Signed in (checked before): the session's id names the guesser; only its hash goes to the store.
    const limit = new UserCodeGuessLimit(config, hashSecret(request.session.get('signedIn')!.id), request.ip)
    await limit.refuseIfBlocked()
    const code = normalUserCode(typed)
    const hash = code === undefined ? undefined : userCodeHash(code)
    const target = hash === undefined ? undefined : await store.findUserCode(hash)
    const record = target === undefined ? undefined : await store.getDeviceCode(target.deviceCodeHash, target.grantId)
    const live = record !== undefined && record.status === 'pending' && record.expiresAt > config.clock()
    const client = live ? await store.getClient(record.clientId) : undefined
    if (client === undefined) {
      await limit.failed()
      return undefined
    }
    return { code: code!, hash: hash!, target: target!, record: record!, client }
  }

  fastify.get(VERIFICATION_PATH, async (request, reply) => {
    const user = await currentUser(config, request)
    const typed = single(request.query as Params, 'user_code')
    const code = typed === undefined ? undefined : normalUserCode(typed)
    if (user === undefined) {
      const back = code === undefined ? VERIFICATION_PATH : `${VERIFICATION_PATH}?${new URLSearchParams({ user_code: displayUserCode(code) }).toString()}`
      return await reply.redirect(signInRedirect(back), 302)
    }
    return await entry(reply, user, code === undefined ? '' : displayUserCode(code))
  })

  fastify.post(VERIFICATION_PATH, { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const user = await currentUser(config, request)
    if (user === undefined) return await reply.redirect(signInRedirect(VERIFICATION_PATH), 303)
    const body = (request.body ?? {}) as Params
    const typed = single(body, 'user_code') ?? ''
    const decision = single(body, 'decision')
    if (decision !== undefined && decision !== 'allow' && decision !== 'deny') throw errors.invalidRequest('decision must be allow or deny')
    let pending: Pending | undefined
    try {
      pending = await pendingCode(request, typed)
    } catch (error) {
      if (!errors.tooManyRequests.is(error)) throw error
      reply.header('retry-after', (error as { retryAfter?: number }).retryAfter)
      return await entry(reply, user, typed, 'Too many wrong codes. Wait a minute, then try again.', 429)
    }
    if (pending === undefined) return await entry(reply, user, typed, WRONG_CODE, 400)
    const { client, record } = pending
    if (decision === undefined) {
      return await sendPage(reply, deviceConfirmPage({
        csrf: reply.generateCsrf(),
        username: user.username,
        appName: client.name,
        permissions: record.scope.map((id) => registry.describe(id)),
        userCode: displayUserCode(pending.code)
      }))
    }
    const approved = decision === 'allow'
    const result = await store.decideDeviceCode(pending.target, pending.hash, { userId: user.id, approved })
    // Decided or expired since it was read (another tab, the clock): as any code no longer pending.
    if (result !== 'ok') return await entry(reply, user, '', WRONG_CODE, 400)
    if (approved) {
      // As the consent page's Allow: the user's apps page lists the app, and removing it there revokes the grant.
      await store.addConsent(user.id, client.id, record.scope)
      config.events.record('device.approved', { grantId: record.grantId, clientId: client.id, userId: user.id, scope: record.scope })
    } else {
      config.events.record('device.denied', { grantId: record.grantId, clientId: client.id, userId: user.id })
    }
    return await sendPage(reply, deviceDonePage(client.name, approved))
  })
}
