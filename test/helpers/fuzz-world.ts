// The fuzz's gateway on a real Redis and the live credentials it draws on (test/fuzz.test.ts,
// test/fuzz-outage.test.ts): the seeds, the world of tokens, codes and sessions, and the check that
// a known-good request is still served at the end.
import { type Test } from 'tap'
import { buildGateway } from '../../gateway/index.ts'
import { RedisStore } from '../../plugin/store/redis/redis-store.ts'
import { addClient, addPublicClient, addUser, authorizeUrl, REDIRECT_URI, signedInBrowser } from './app.ts'
import { echoRoutes, liveToken, type LiveTokens, signedInject } from './gateway.ts'
import { type TestRedis } from './redis.ts'
import { type FastifyInstance } from 'fastify'

export const SEED = Number(process.env.FUZZ_SEED ?? 0x5eedf022) >>> 0
export const OUTAGE_SEED = (SEED ^ 0x0b5e55ed) >>> 0

const SECRET = 'fuzz-test-secret-0123456789abcdef'

export interface World {
  /** Signs the valid requests: its refresh token and code are never fuzzed, so it stays live. */
  main: LiveTokens
  /** Its client, refresh token and codes feed the token endpoint; it may be revoked by the fuzz. */
  spare: LiveTokens
  codes: string[]
  /** A signed-in session the fuzz never signs out, to reach the consent page and code issuance. */
  session: Session
  /** Another, for the sign-out fuzz (sign-out ends a session in the store). */
  exit: Session
  /** Valid signed requests already answered, for replays. */
  sent: Array<{ method: string, url: string, authorization: string }>
  /** A public client on SPA_ORIGIN. */
  spa: string
}

interface Session { cookie: string, csrf: string }

interface FuzzGateway { app: FastifyInstance, store: RedisStore, port: number }

/** The gateway with the echo route and a configured demo client, on `redis`, listening on loopback. */
export async function fuzzGateway (t: Test, redis: TestRedis): Promise<FuzzGateway> {
  const store = await new RedisStore(redis.url, { prefix: redis.prefix }).connect()
  const { clientId, clientSecret } = await addClient(store)
  const app = await buildGateway({ store, secret: SECRET, config: { routes: [...echoRoutes, ...QUOTA_ROUTES] }, demo: { clientId, clientSecret, redirectUri: REDIRECT_URI } })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, store, port: (app.server.address() as { port: number }).port }
}

export async function provision (app: FastifyInstance): Promise<World> {
  const main = await liveToken(app)
  const spare = await liveToken(app)
  const user = await addUser(app.macgate.store)
  const browser = await signedInBrowser(app, user)
  const exit = await signedInBrowser(app, user)
  const codes: string[] = []
  for (let i = 0; i < 30; i++) {
    const answer = await browser.decide(authorizeUrl({ client_id: spare.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1 3' }), 'allow')
    codes.push(new URL(String(answer.headers.location)).searchParams.get('code')!)
  }
  const { clientId: spa } = await addPublicClient(app.macgate.store)
  return { main, spare, codes, session: { cookie: browser.cookie, csrf: browser.lastCsrf }, exit: { cookie: exit.cookie, csrf: exit.lastCsrf }, sent: [], spa }
}

/** Limited routes (README, "Quotas"): one never reached, one the fuzz goes over at once. */
const QUOTA_ROUTES = [
  { path: '/echo/q/*', methods: ['GET', 'POST'], scopes: [], match: 'all' as const, quota: { perMinute: 1_000_000 } },
  { path: '/echo/low/*', methods: ['GET', 'POST'], scopes: [], match: 'all' as const, quota: { perMinute: 5 } }
]

/** A path under a limited route, whose every answer from the MAC check carries the RateLimit fields. */
export function limitedPath (url: string): boolean {
  return url.startsWith('/echo/q/') || url.startsWith('/echo/low/')
}

export async function stillServes (t: Test, app: FastifyInstance, world: World): Promise<void> {
  const answer = await signedInject(app, { url: '/user/profile', token: world.main.accessToken, macKey: world.main.macKey })
  t.equal(answer.statusCode, 200, `a known-good signed request is still served: ${answer.body.slice(0, 120)}`)
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'healthz still answers')
}
