// The admin API tests' parts (admin-api*.test.ts): the admin server on a test gateway's store,
// registry and audit trail, JSON calls to it, the refusals' shapes, and what a user's session and
// tokens still reach.
import type { Test } from 'tap'
import { buildAdminServer } from '../../gateway/index.ts'
import { type AuditEvent } from '../../plugin/index.ts'
import { authorizeUrl, callToken, REDIRECT_URI } from './app.ts'
import { signedInject } from './gateway.ts'
import { type Tokens } from './grants.ts'
import { type FastifyInstance, type InjectOptions } from 'fastify'

/** The open API's answer to a revoked token. */
export const REVOKED = { result: 'error', description: 'access token invalid or expired', code: 96008 }
/** A timestamp as the admin API writes it. */
export const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/** The admin server on `app`'s store, registry and audit trail, with `token` as its bearer token if given. */
export async function adminFor (t: Test, app: FastifyInstance, token?: string): Promise<FastifyInstance> {
  const admin = await buildAdminServer({
    metrics: async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', text: '' }),
    store: app.macgate.store,
    api: { registry: app.macgate.registry, events: app.macgate.events },
    ...(token !== undefined && { token })
  })
  t.teardown(async () => await admin.close())
  return admin
}

interface Answer { status: number, body: any, headers: Record<string, unknown> }

/** A JSON request to the admin server (`body` as JSON unless a string, sent as it is). */
export async function call (admin: FastifyInstance, method: InjectOptions['method'], url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await admin.inject({
    method,
    url,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
    ...(body !== undefined && { payload: typeof body === 'string' ? body : JSON.stringify(body) })
  })
  let parsed: unknown
  try {
    parsed = response.body === '' ? undefined : JSON.parse(response.body)
  } catch {
    parsed = response.body
  }
  return { status: response.statusCode, body: parsed, headers: response.headers }
}

export function assertBadRequest (t: Test, answer: Answer, label: string, message?: RegExp): void {
  t.equal(answer.status, 400, `${label}: 400 (got ${answer.status} ${JSON.stringify(answer.body)})`)
  t.equal(answer.body?.error, 'invalid_request', `${label}: invalid_request`)
  t.type(answer.body?.message, 'string', `${label}: a message`)
  if (message !== undefined) t.match(answer.body?.message, message, `${label}: the message says why`)
}

export function assertNotFound (t: Test, answer: Answer, label: string): void {
  t.equal(answer.status, 404, `${label}: 404 (got ${answer.status} ${JSON.stringify(answer.body)})`)
  t.equal(answer.body?.error, 'not_found', `${label}: not_found`)
}

export function recorder (app: FastifyInstance): AuditEvent[] {
  const events: AuditEvent[] = []
  app.macgate.events.on('audit', (event) => { events.push(event) })
  return events
}

export async function profile (app: FastifyInstance, tokens: Tokens) {
  const response = await signedInject(app, { url: '/user/profile', token: tokens.access_token, macKey: tokens.mac_key })
  return { status: response.statusCode, body: JSON.parse(response.body) as unknown }
}

export async function refresh (app: FastifyInstance, client: { clientId: string, clientSecret: string }, tokens: Tokens) {
  return await callToken(app, { client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'refresh_token', refresh_token: tokens.refresh_token })
}

/** What `cookie` gets at the authorize endpoint: 200 (signed in) or 302 (to sign-in). */
export async function sessionStatus (app: FastifyInstance, cookie: string, clientId: string): Promise<number> {
  return (await app.inject({ url: authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1' }), headers: { cookie } })).statusCode
}
