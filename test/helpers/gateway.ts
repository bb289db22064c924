// Gateway test helpers: a gateway built with a config of the test's own, a live token set obtained
// through the real code flow, and requests signed by hand (no client-library normalising) so that
// a test can say exactly which string was signed.
import { createHmac, randomInt } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import type { Test } from 'tap'
import { sampleRoutes, type GatewayConfig, type RouteRule } from '../../gateway/config/gateway-config.ts'
import { canonicalQuery, signingHost } from '../../plugin/mac/signature.ts'
import { addClient, buildTestApp, callToken, obtainCode, REDIRECT_URI, type TestApp } from './app.ts'
import { listenOnLoopback } from './listen.ts'

export const API_HOST = 'api.example.com'

/** The sample routes plus an `/echo/*` route (any scope) whose upstream answers what it received. */
export const echoRoutes: RouteRule[] = [
  ...sampleRoutes,
  { path: '/echo/*', methods: ['GET', 'POST'], scopes: [], match: 'all' }
]

export type TestGateway = TestApp

/** buildGateway with `config`, on a memory store or a Redis of the test's own; closed at teardown. */
export async function buildTestGateway (t: Test, { store = 'memory', config = {}, secret }: { store?: 'memory' | 'redis', config?: Partial<GatewayConfig>, secret?: string } = {}): Promise<TestGateway> {
  return await buildTestApp(t, { store, ...config, ...(secret !== undefined && { secret }) })
}

export interface LiveTokens {
  accessToken: string
  macKey: string
  refreshToken: string
  openId: string
  clientId: string
  clientSecret: string
  userId: string
  /** The granted scope as the token endpoint returned it. */
  scope: string
  /** The code the tokens came from (spent). */
  code: string
}

/** A new client (allowed `clientScope`) and user, and tokens from the real code flow. */
export async function liveToken (app: FastifyInstance, { clientScope = '1 3 4 6', scope }: { clientScope?: string, scope?: string } = {}): Promise<LiveTokens> {
  const { clientId, clientSecret } = await addClient(app.macgate.store, { scope: clientScope })
  const { code, user } = await obtainCode(app, clientId, scope === undefined ? {} : { scope })
  const answer = await callToken(app, { client_id: clientId, client_secret: clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code })
  if (answer.status !== 200) throw new Error(`token exchange failed: ${answer.raw}`)
  const body = answer.body as Record<string, string>
  return {
    accessToken: body.access_token!,
    macKey: body.mac_key!,
    refreshToken: body.refresh_token!,
    openId: body.openId!,
    clientId,
    clientSecret,
    userId: user.userId,
    scope: body.scope!,
    code
  }
}

/** A nonce `R:M` with M = now + `offsetMinutes`; R random unless given. */
export function nonceAt (offsetMinutes = 0, random: string | number = randomInt(1, 2 ** 47)): string {
  return `${random}:${Math.floor(Date.now() / 60000) + offsetMinutes}`
}

/**
 * Waits when within 1.5 s of a minute boundary, so a nonce's minute cannot turn while a test runs.
 * Real time: these tests sign by the wall clock, as clients do, and the gateway reads it too; a
 * stepped clock would have to reach every signing helper (it waits in 1 case of 40).
 */
export async function awayFromMinuteEdge (): Promise<void> {
  const intoMinute = Date.now() % 60000
  if (intoMinute > 58500) await new Promise((resolve) => setTimeout(resolve, 60000 - intoMinute + 100))
}

/** base64(HMAC-SHA1(utf8(key), text)), written out here rather than taken from the plugin. */
export function hmac (macKey: string, text: string): string {
  return createHmac('sha1', Buffer.from(macKey, 'utf8')).update(text, 'utf8').digest('base64')
}

export interface SignedParts {
  token: string
  nonce: string
  mac: string
}

export interface SignedInjectOptions {
  method?: string
  /** Path and query as sent. */
  url: string
  token: string
  macKey: string
  nonce?: string
  /** The Host header; default api.example.com. */
  host?: string
  /** What is signed, where it should differ from the request; each used verbatim. */
  sign?: { method?: string, host?: string, path?: string, query?: string }
  /** Formats the Authorization header; default the client library's quoting. */
  authorization?: (parts: SignedParts) => string
  headers?: Record<string, string>
  payload?: InjectOptions['payload']
}

/** The exact string the helper signs for `options`. */
export function signedString ({ method = 'GET', url, nonce, host = API_HOST, sign = {} }: SignedInjectOptions & { nonce: string }): string {
  const queryStart = url.indexOf('?')
  const path = queryStart === -1 ? url : url.slice(0, queryStart)
  const rawQuery = queryStart === -1 ? '' : url.slice(queryStart + 1)
  return `${nonce}\n${sign.method ?? method.toUpperCase()}\n${sign.host ?? signingHost(host)}\n${sign.path ?? path}\n${sign.query ?? canonicalQuery(rawQuery)}\n`
}

export function defaultAuthorization ({ token, nonce, mac }: SignedParts): string {
  return `MAC access_token="${encodeURIComponent(token)}", nonce="${encodeURIComponent(nonce)}", mac="${encodeURIComponent(mac)}"`
}

/** A request signed with `macKey` through `app.inject`. */
export async function signedInject (app: FastifyInstance, options: SignedInjectOptions): Promise<LightMyRequestResponse> {
  const nonce = options.nonce ?? nonceAt()
  const mac = hmac(options.macKey, signedString({ ...options, nonce }))
  const format = options.authorization ?? defaultAuthorization
  return await app.inject({
    method: (options.method ?? 'GET') as InjectOptions['method'],
    url: options.url,
    headers: { host: options.host ?? API_HOST, ...options.headers, authorization: format({ token: options.token, nonce, mac }) },
    ...(options.payload !== undefined && { payload: options.payload })
  })
}

/** The open API's error body. */
export function openApiError (code: number, description: string): Record<string, unknown> {
  return { result: 'error', description, code }
}

export interface Recorded {
  method: string
  url: string
  headers: IncomingHttpHeaders
  /** The header lines as received: names as spelt, repeats kept. */
  rawHeaders: string[]
  body: string
  socket: Socket
}

/** A node:http upstream on a loopback port that records every request it gets and answers JSON. */
export async function recordingUpstream (t: Test): Promise<{ url: string, requests: Recorded[], server: Server }> {
  const requests: Recorded[] = []
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      requests.push({ method: request.method!, url: request.url!, headers: request.headers, rawHeaders: request.rawHeaders, body, socket: request.socket })
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify({ result: 'ok', description: 'success', data: { n: requests.length, bytes: body.length }, code: 0 }))
    })
  })
  server.keepAliveTimeout = 60_000
  return { url: await listenOnLoopback(t, server), requests, server }
}
