// Gateways on real loopback ports, called over real HTTP with fetch (no inject).
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import type { Test } from 'tap'
import type { GatewayConfig } from '../../gateway/config/gateway-config.ts'
import { buildGateway } from '../../gateway/index.ts'
import { parseTokenResponse, signRequest, type TokenResponse } from '../../plugin/client/index.ts'
import { RedisStore, type RedisTarget } from '../../plugin/store/redis/redis-store.ts'
import { obtainCode, REDIRECT_URI } from './app.ts'

/** Where a live gateway keeps its records: a test Redis (`url`) or a test cluster (`clusterNodes`). */
export type SharedStore = { prefix: string } & ({ url: string } | { clusterNodes: string[] })

export interface LiveGateway {
  app: FastifyInstance
  store: RedisStore
  /** `http://127.0.0.1:PORT` */
  origin: string
}

/** A gateway with a Redis connection of its own, listening on a loopback port; closed at teardown. */
export async function liveGateway (t: Test, redis: SharedStore, secret: string, config: Partial<GatewayConfig> = {}, port = 0): Promise<LiveGateway> {
  const target: RedisTarget = 'url' in redis ? redis.url : { clusterNodes: redis.clusterNodes }
  const store = await new RedisStore(target, { prefix: redis.prefix }).connect()
  const app = await buildGateway({ store, secret, config })
  const origin = await app.listen({ port, host: '127.0.0.1' })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  return { app, store, origin }
}

export interface TokenAnswer { status: number, raw: string, body: Record<string, unknown>, contentType: string | null }

/** GET /oauth2/token over HTTP; `body` is the JSON after `&&&START&&&`. */
export async function tokenRequest (origin: string, params: Record<string, string>): Promise<TokenAnswer> {
  const response = await fetch(`${origin}/oauth2/token?${new URLSearchParams(params).toString()}`)
  const raw = await response.text()
  const json = raw.startsWith('&&&START&&&') ? raw.slice('&&&START&&&'.length) : raw
  return { status: response.status, raw, body: JSON.parse(json) as Record<string, unknown>, contentType: response.headers.get('content-type') }
}

export interface Issued { code: string, tokens: TokenResponse }

/** A code through the gateway's pages (inject), exchanged at its token endpoint over HTTP. */
export async function issueTokens (gateway: LiveGateway, clientId: string, clientSecret: string): Promise<Issued> {
  const { code } = await obtainCode(gateway.app, clientId)
  const answer = await tokenRequest(gateway.origin, codeExchange(clientId, clientSecret, code))
  if (answer.status !== 200) throw new Error(`code exchange failed: ${answer.status} ${answer.raw}`)
  return { code, tokens: parseTokenResponse(answer.raw) }
}

export function codeExchange (clientId: string, clientSecret: string, code: string): Record<string, string> {
  return { grant_type: 'authorization_code', client_id: clientId, client_secret: clientSecret, redirect_uri: REDIRECT_URI, code }
}

export function refreshExchange (clientId: string, clientSecret: string, refreshToken: string): Record<string, string> {
  return { grant_type: 'refresh_token', client_id: clientId, client_secret: clientSecret, redirect_uri: REDIRECT_URI, refresh_token: refreshToken }
}

export interface ApiAnswer { status: number, body: Record<string, unknown>, raw: string, wwwAuthenticate: string | null }

/** A signed GET (fresh nonce unless `authorization` is given) over HTTP. */
export async function signedGet (origin: string, path: string, tokens: { access_token: string, mac_key: string }, authorization?: string): Promise<ApiAnswer & { authorization: string }> {
  const url = `${origin}${path}`
  authorization ??= signRequest({ method: 'GET', url, accessToken: tokens.access_token, macKey: tokens.mac_key })
  const response = await fetch(url, { headers: { authorization } })
  const raw = await response.text()
  let body: Record<string, unknown>
  try {
    body = JSON.parse(raw) as Record<string, unknown>
  } catch {
    body = { unparsed: raw }
  }
  return { status: response.status, body, raw, wwwAuthenticate: response.headers.get('www-authenticate'), authorization }
}

/**
 * Polls `origin` with freshly signed calls until one is refused with 401 96008, or `limitMs`
 * after `since` has passed. Resolves to the last answer and the ms from `since` to it. Callers
 * take `since` when the revoking request has answered: the store has revoked and published by
 * then, so what is timed is the announcement, not the revoking instance's own handling.
 */
export async function pollUntilRefused (origin: string, path: string, tokens: { access_token: string, mac_key: string }, since: number, limitMs = 1000): Promise<{ last: ApiAnswer, elapsed: number, polls: number }> {
  let polls = 0
  for (;;) {
    const last = await signedGet(origin, path, tokens)
    polls++
    const elapsed = Date.now() - since
    if ((last.status === 401 && last.body.code === 96008) || elapsed >= limitMs) return { last, elapsed, polls }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Polls `attempt` until it resolves truthy, every `everyMs`, at most `limitMs`; false on timeout. */
export async function eventually (attempt: () => Promise<boolean>, limitMs: number, everyMs = 100): Promise<boolean> {
  const deadline = Date.now() + limitMs
  for (;;) {
    if (await attempt().catch(() => false)) return true
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** Calls per command from `INFO commandstats`, e.g. `{ get: 12, set: 3 }` (INFO itself left out). */
export async function commandCalls (admin: Redis): Promise<Record<string, number>> {
  const text = await admin.info('commandstats')
  const calls: Record<string, number> = {}
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (match[1] !== 'info') calls[match[1]!] = Number(match[2])
  }
  return calls
}

/** Keys Redis looked up and did not find, so far (INFO stats): a multi-key read counts each key. */
export async function keyspaceMisses (admin: Redis): Promise<number> {
  return Number(/^keyspace_misses:(\d+)/m.exec(await admin.info('stats'))?.[1])
}

/** The difference of two `commandCalls` snapshots, commands with no new calls left out. */
export function callsSince (before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const delta: Record<string, number> = {}
  for (const [name, count] of Object.entries(after)) {
    const grown = count - (before[name] ?? 0)
    if (grown !== 0) delta[name] = grown
  }
  return delta
}
