import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { Test } from 'tap'
import { buildGateway } from '../../gateway/index.ts'
import { registerClient } from '../../plugin/operator/clients.ts'
import type { NewClient } from '../../plugin/operator/client-checks.ts'
import { createUser } from '../../plugin/operator/users.ts'
import type { GatewayConfig } from '../../gateway/config/gateway-config.ts'
import { ScopeRegistry } from '../../plugin/access/scope.ts'
import { MemoryStore } from '../../plugin/store/memory/memory-store.ts'
import { RedisStore } from '../../plugin/store/redis/redis-store.ts'
import type { Store } from '../../plugin/store/store.ts'
import { startRedis, type TestRedis } from './redis.ts'

export interface TestApp {
  app: FastifyInstance
  store: Store
  redis?: TestRedis
}

/** A gateway on the embedded store, or on a Redis of the test's own; closed when the test ends. */
export async function buildTestApp (t: Test, { store: kind = 'memory', redis, secret, clock, ...config }: { store?: 'memory' | 'redis', redis?: TestRedis, secret?: string, clock?: () => number } & Partial<GatewayConfig> = {}): Promise<TestApp> {
  let store: Store
  if (kind === 'redis') {
    redis ??= await startRedis(t)
    store = await new RedisStore(redis.url, { prefix: redis.prefix }).connect()
  } else {
    // One clock for the plugin and the embedded store, when the test steps one.
    store = new MemoryStore(clock !== undefined ? { clock } : {})
  }
  const app = await buildGateway({ store, config, ...(secret !== undefined && { secret }), ...(clock !== undefined && { clock }) })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  return { app, store, ...(redis !== undefined && { redis }) }
}

export const REDIRECT_URI = 'https://app.example.com/callback'

export async function addClient (store: Store, overrides: Omit<Partial<NewClient>, 'public'> = {}) {
  const { client, clientSecret } = await registerClient(store, new ScopeRegistry(), {
    name: 'Test App', redirectUris: [REDIRECT_URI], scope: '1 3 4 6', ...overrides, public: false
  })
  return { client, clientId: client.id, clientSecret }
}

/** The origin of a public client's redirect URI: a single-page app's. */
export const SPA_ORIGIN = 'https://spa.example'
export const SPA_REDIRECT_URI = `${SPA_ORIGIN}/callback`

/** A public client (no secret, PKCE), by default a single-page app on SPA_ORIGIN. */
export async function addPublicClient (store: Store, overrides: Omit<Partial<NewClient>, 'public'> = {}) {
  const { client } = await registerClient(store, new ScopeRegistry(), {
    name: 'Browser App', redirectUris: [SPA_REDIRECT_URI], scope: '1 3 4 6', ...overrides, public: true
  })
  return { client, clientId: client.id }
}

/**
 * The fixture users' password cost: scrypt at N=2^10 (1 MiB, a few ms), not the default 2^15 (32 MiB,
 * 180 ms here). Sign-in reads the cost from the stored hash, so the check is the same code; users made
 * through the CLI, the admin API and `start` keep the default (admin-api-users.test.ts asserts it).
 */
const FIXTURE_PASSWORD_COST = { N: 2 ** 10, r: 8, p: 1 }

let users = 0
export async function addUser (store: Store, username = `user${++users}`, password = 'correct horse battery') {
  const { userId } = await createUser(store, username, password, { passwordCost: FIXTURE_PASSWORD_COST })
  return { userId, username, password }
}

/** A browser stand-in over `inject`: keeps the session cookie and reads the forms' CSRF tokens. */
export class InjectBrowser {
  cookie = ''
  lastCsrf = ''

  readonly app: FastifyInstance

  constructor (app: FastifyInstance) {
    this.app = app
  }

  #remember (response: LightMyRequestResponse): LightMyRequestResponse {
    const setCookie = response.headers['set-cookie']
    const first = Array.isArray(setCookie) ? setCookie[0] : setCookie
    if (first !== undefined) this.cookie = first.split(';')[0]!
    const csrf = /name="_csrf" value="([^"]+)"/.exec(response.body)
    if (csrf !== null) this.lastCsrf = csrf[1]!
    return response
  }

  async get (url: string): Promise<LightMyRequestResponse> {
    return this.#remember(await this.app.inject({ method: 'GET', url, headers: { cookie: this.cookie } }))
  }

  /** A form post with the last CSRF token first (unless `csrf: false`); pairs where a field repeats (checkboxes). */
  async post (url: string, form: Record<string, string> | Array<[string, string]>, { csrf = true } = {}): Promise<LightMyRequestResponse> {
    const pairs = Array.isArray(form) ? form : Object.entries(form)
    const payload = new URLSearchParams([...(csrf ? [['_csrf', this.lastCsrf] as [string, string]] : []), ...pairs]).toString()
    return this.#remember(await this.app.inject({
      method: 'POST', url, payload, headers: { cookie: this.cookie, 'content-type': 'application/x-www-form-urlencoded' }
    }))
  }

  async signIn (username: string, password: string, returnTo = ''): Promise<LightMyRequestResponse> {
    await this.get(`/oauth2/signin?${new URLSearchParams({ return_to: returnTo }).toString()}`)
    return await this.post('/oauth2/signin', { username, password, return_to: returnTo })
  }

  /** The confirmation page's decision for an authorization request URL. */
  async decide (authorizeUrl: string, decision: 'allow' | 'deny'): Promise<LightMyRequestResponse> {
    const page = await this.get(authorizeUrl)
    if (page.statusCode !== 200) return page
    return await this.post(authorizeUrl, { decision })
  }
}

/** A browser stand-in signed in as `user`. */
export async function signedInBrowser (app: FastifyInstance, user: { username: string, password: string }): Promise<InjectBrowser> {
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  return browser
}

export function authorizeUrl (params: Record<string, string>): string {
  return `/oauth2/authorize?${new URLSearchParams(params).toString()}`
}

/** Signs in (if needed) and allows; resolves to the final redirect's Location. */
export async function authorizeAndAllow (browser: InjectBrowser, user: { username: string, password: string }, params: Record<string, string>): Promise<URL> {
  if (browser.cookie === '') await browser.signIn(user.username, user.password)
  const response = await browser.decide(authorizeUrl(params), 'allow')
  return new URL(response.headers.location as string)
}

/** A code for the client, issued to the user. */
export async function obtainCode (app: FastifyInstance, clientId: string, extra: Record<string, string> = {}) {
  const browser = new InjectBrowser(app)
  const user = await addUser(app.macgate.store)
  const location = await authorizeAndAllow(browser, user, { client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', ...extra })
  return { code: location.searchParams.get('code')!, location, user, browser }
}

export interface TokenAnswer {
  status: number
  headers: LightMyRequestResponse['headers']
  raw: string
  body: Record<string, unknown>
}

/** Calls /oauth2/token; `body` is the JSON after the `&&&START&&&` prefix. */
export async function callToken (app: FastifyInstance, params: Record<string, string>, { method = 'GET', headers = {} }: { method?: 'GET' | 'POST', headers?: Record<string, string> } = {}): Promise<TokenAnswer> {
  const form = new URLSearchParams(params).toString()
  const response = method === 'GET'
    ? await app.inject({ method, url: `/oauth2/token?${form}`, headers })
    : await app.inject({ method, url: '/oauth2/token', payload: form, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } })
  const raw = response.body
  const json = raw.startsWith('&&&START&&&') ? raw.slice('&&&START&&&'.length) : raw
  return { status: response.statusCode, headers: response.headers, raw, body: JSON.parse(json) as Record<string, unknown> }
}
