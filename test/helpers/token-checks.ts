// Assertions shared by the token endpoint tests (test/token-*.test.ts): the exact success and
// error bodies of contract section 4, and a few request builders the generic helper lacks.
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { grantIdOf } from '../../plugin/access/credentials.ts'
import { REDIRECT_URI, type TokenAnswer } from './app.ts'

export const PREFIX = '&&&START&&&'
export const TOKEN_FIELDS = ['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type', 'mac_key', 'mac_algorithm', 'openId']
export const NINETY_DAYS = 7_776_000
export const TEN_YEARS = 315_360_000

export interface TokenSetBody {
  access_token: string
  expires_in: number
  refresh_token: string
  scope: string
  token_type: string
  mac_key: string
  mac_algorithm: string
  openId: string
}

/** The headers every token endpoint answer carries, success or failure. */
export function assertTokenHeaders (t: Test, headers: TokenAnswer['headers']): void {
  t.equal(headers['content-type'], 'application/json;charset=UTF-8', 'content-type')
  t.equal(headers['cache-control'], 'no-store', 'cache-control')
  t.equal(headers.pragma, 'no-cache', 'pragma')
}

/** A 200 with exactly the eight fields, in the contract's order and forms. */
export function assertTokenSet (t: Test, answer: TokenAnswer, { scope = '1 3', expiresIn = NINETY_DAYS } = {}): TokenSetBody {
  t.equal(answer.status, 200, `status 200 (${answer.raw.slice(0, 120)})`)
  assertTokenHeaders(t, answer.headers)
  t.ok(answer.raw.startsWith(`${PREFIX}{"access_token":"`), 'body starts with &&&START&&&{"access_token":')
  t.strictSame(Object.keys(answer.body), TOKEN_FIELDS, 'exactly the eight fields, in order')
  const body = answer.body as unknown as TokenSetBody
  t.equal(body.expires_in, expiresIn, 'expires_in is a JSON number')
  t.ok(answer.raw.includes(`"expires_in":${expiresIn},`), 'expires_in unquoted in the raw body')
  t.equal(body.scope, scope, 'scope')
  t.equal(body.token_type, 'mac', 'token_type')
  t.equal(body.mac_algorithm, 'HmacSha1', 'mac_algorithm')
  // >= 256 random bits: 43 base64url characters after the grant-id prefix.
  t.match(body.access_token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43,}$/, 'access_token form')
  t.match(body.refresh_token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43,}$/, 'refresh_token form')
  t.not(body.access_token, body.refresh_token, 'access and refresh token differ')
  t.match(body.mac_key, /^[A-Za-z0-9_-]{27,}$/, 'mac_key: >= 160 bits of base64url')
  t.match(body.openId, /^[A-Za-z0-9_-]{16,}$/, 'openId is an opaque string')
  return body
}

/** A failure: exactly `&&&START&&&{"error":N,"error_description":"..."}` with the JSON headers. */
export function assertTokenError (t: Test, answer: TokenAnswer, errno: number, status = 400, description?: string): void {
  t.equal(answer.status, status, `status ${status} for ${errno}`)
  assertTokenHeaders(t, answer.headers)
  t.strictSame(Object.keys(answer.body), ['error', 'error_description'], 'exactly error and error_description')
  t.equal(answer.body.error, errno, `error ${errno} (${answer.raw})`)
  const text = answer.body.error_description
  t.ok(typeof text === 'string' && text !== '', 'error_description is a non-empty string')
  if (description !== undefined) t.equal(text, description, 'error_description')
  t.equal(answer.raw, PREFIX + JSON.stringify({ error: errno, error_description: text }), 'raw body shape')
}

/** Any request to the token endpoint, sent exactly as written (no re-encoding). */
export async function rawToken (app: FastifyInstance, { method = 'GET', url = '/oauth2/token', payload, headers = {} }: {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'HEAD' | 'OPTIONS'
  url?: string
  payload?: string
  headers?: Record<string, string>
}): Promise<TokenAnswer> {
  const response = await app.inject({ method, url, headers, ...(payload !== undefined && { payload }) })
  const raw = response.body
  const json = raw.startsWith(PREFIX) ? raw.slice(PREFIX.length) : raw
  let body: Record<string, unknown> = {}
  try {
    body = JSON.parse(json) as Record<string, unknown>
  } catch {}
  return { status: response.statusCode, headers: response.headers, raw, body }
}

/** The parameters of an authorization_code exchange. */
export function codeParams (client: { clientId: string, clientSecret: string }, code: string, extra: Record<string, string> = {}): Record<string, string> {
  return { grant_type: 'authorization_code', client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: REDIRECT_URI, code, ...extra }
}

/** The parameters of a refresh_token grant. */
export function refreshParams (client: { clientId: string, clientSecret: string }, refreshToken: string, extra: Record<string, string> = {}): Record<string, string> {
  return { grant_type: 'refresh_token', client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: REDIRECT_URI, refresh_token: refreshToken, ...extra }
}

/** `Authorization: Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1). */
export function basicAuth (clientId: string, clientSecret: string): string {
  const encode = (value: string): string => new URLSearchParams({ v: value }).toString().slice(2)
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`
}

/** The grant id inside a code or token the app issued (what the store's lookups take). */
export function grantOf (app: FastifyInstance, value: string): string {
  const grantId = grantIdOf(app.macgate.secret, value)
  if (grantId === undefined) throw new Error(`not a value this app issued: ${value}`)
  return grantId
}

/** A token request (form POST) from `remoteAddress`. */
export async function tokenFrom (app: FastifyInstance, params: Record<string, string>, remoteAddress = '127.0.0.1'): Promise<TokenAnswer> {
  const response = await app.inject({
    method: 'POST',
    url: '/oauth2/token',
    payload: new URLSearchParams(params).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    remoteAddress
  })
  const raw = response.body
  return { status: response.statusCode, headers: response.headers, raw, body: JSON.parse(raw.slice(PREFIX.length)) as Record<string, unknown> }
}
