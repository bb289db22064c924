// The store stopped under a running gateway: every page and endpoint answers 503 with 96000 in its
// own form (an HTML error page, the token endpoint's prefixed JSON, the open API's JSON), never a
// 400, 401 or 500; and once Redis is back (empty) the authorization endpoint serves again.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { addClient, addUser, authorizeUrl, buildTestApp, InjectBrowser, REDIRECT_URI } from '../../helpers/app.ts'
import { liveToken, signedInject } from '../../helpers/gateway.ts'
import { eventually } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'

const UNAVAILABLE_TEXT = 'service temporarily unavailable'
const TOKEN_UNAVAILABLE = '&&&START&&&{"error":96000,"error_description":"service temporarily unavailable"}'
const API_UNAVAILABLE = { result: 'error', description: UNAVAILABLE_TEXT, code: 96000 }
const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
  'referrer-policy': 'no-referrer'
}

const shared = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''
const own = { skip: shared ? 'stops and restarts Redis: needs a redis-server of its own, not REDIS_URL' : false }

/** The account host's 503 page: the code and its text, not blaming the client, framed out and uncached. */
function assertUnavailablePage (t: Test, response: LightMyRequestResponse): void {
  t.equal(response.statusCode, 503, `status 503, never 400, 401 or 500 (got ${response.statusCode})`)
  t.match(String(response.headers['content-type']), /^text\/html/, 'an HTML page')
  t.ok(response.body.includes('<span id="error-code">96000</span>'), 'shows the code 96000')
  t.ok(response.body.includes(UNAVAILABLE_TEXT), `shows "${UNAVAILABLE_TEXT}"`)
  t.notOk(response.body.includes('The application sent an invalid request'), 'does not blame the application')
  t.notOk(response.body.includes('undefined'), 'no "undefined" on the page')
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) {
    t.equal(response.headers[name], value, `${name}: ${value}`)
  }
}

/** The token endpoint's 503: the prefixed 96000 body in the endpoint's JSON content type. */
function assertTokenUnavailable (t: Test, response: LightMyRequestResponse): void {
  t.equal(response.statusCode, 503, `status 503, never 400, 401 or 500 (got ${response.statusCode})`)
  t.equal(response.body, TOKEN_UNAVAILABLE, 'the prefixed 96000 body')
  t.equal(response.headers['content-type'], 'application/json;charset=UTF-8', 'its JSON content type')
}

async function tokenGet (app: FastifyInstance, params: Record<string, string>): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'GET', url: `/oauth2/token?${new URLSearchParams(params).toString()}` })
}

async function tokenPost (app: FastifyInstance, params: Record<string, string>): Promise<LightMyRequestResponse> {
  return await app.inject({
    method: 'POST',
    url: '/oauth2/token',
    payload: new URLSearchParams(params).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' }
  })
}

t.test('Redis stopped: every page and endpoint answers 503 96000', own, async (t) => {
  const redis = await startRedis(t)
  // No token cache: the open API must read the token from Redis.
  const { app, store } = await buildTestApp(t, { store: 'redis', redis, tokenCache: { max: 0, maxAgeMs: 300_000, negativeTtlMs: 10_000 } })

  // Everything a browser and an SDK hold before the outage.
  const { clientId, clientSecret } = await addClient(store)
  const user = await addUser(store)
  const authorize = authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' })

  const anonymous = new InjectBrowser(app)
  t.equal((await anonymous.get(authorize)).statusCode, 302, 'before: a signed-out user is sent to sign in')

  const signingIn = new InjectBrowser(app)
  t.equal((await signingIn.get(`/oauth2/signin?${new URLSearchParams({ return_to: authorize }).toString()}`)).statusCode, 200, 'before: the sign-in form')
  t.not(signingIn.lastCsrf, '', 'before: the sign-in form carries a CSRF token')

  const signedIn = new InjectBrowser(app)
  t.equal((await signedIn.signIn(user.username, user.password, authorize)).statusCode, 303, 'before: signed in')
  t.equal((await signedIn.get(authorize)).statusCode, 200, 'before: the confirmation page')

  const consenting = new InjectBrowser(app)
  t.equal((await consenting.signIn(user.username, user.password, authorize)).statusCode, 303, 'before: signed in')
  t.equal((await consenting.get(authorize)).statusCode, 200, 'before: the confirmation page')
  t.not(consenting.lastCsrf, '', 'before: the confirmation page carries a CSRF token')

  const token = await liveToken(app)
  const profile = async (): Promise<LightMyRequestResponse> => await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })
  t.equal((await profile()).statusCode, 200, 'before: the open API serves the token')

  await redis.stop()

  await t.test('GET /oauth2/authorize, signed out: 503 page', async (t) => {
    assertUnavailablePage(t, await anonymous.get(authorize))
  })

  await t.test('GET /oauth2/authorize, signed in: 503 page', async (t) => {
    assertUnavailablePage(t, await signedIn.get(authorize))
  })

  await t.test('POST /oauth2/signin: 503 page', async (t) => {
    assertUnavailablePage(t, await signingIn.post('/oauth2/signin', { username: user.username, password: user.password, return_to: authorize }))
  })

  await t.test('POST /oauth2/authorize (allow): 503 page', async (t) => {
    assertUnavailablePage(t, await consenting.post(authorize, { decision: 'allow' }))
  })

  await t.test('GET and POST /oauth2/token: 503 with the prefixed 96000', async (t) => {
    const exchange = { client_id: clientId, client_secret: clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code: 'any-code' }
    assertTokenUnavailable(t, await tokenGet(app, exchange))
    assertTokenUnavailable(t, await tokenPost(app, exchange))
  })

  await t.test('MAC-signed GET /user/profile, token read from Redis: 503 96000', async (t) => {
    const response = await profile()
    t.equal(response.statusCode, 503, `status 503, never 400, 401 or 500 (got ${response.statusCode})`)
    t.same(response.json(), API_UNAVAILABLE, 'the open API error shape')
  })

  await t.test('Redis back (empty): a new client reaches the authorization endpoint within 10 s', async (t) => {
    await redis.start()
    const started = Date.now()
    let last: LightMyRequestResponse | undefined
    const back = await eventually(async () => {
      const { clientId } = await addClient(store)
      last = await app.inject({ method: 'GET', url: authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' }) })
      return last.statusCode === 302
    }, 10_000)
    t.ok(back, `served again ${Date.now() - started} ms after Redis came back (last status ${last?.statusCode ?? 'none'})`)
    t.match(String(last?.headers.location), /^\/oauth2\/signin\?/, 'the sign-in redirect')
  })
})
