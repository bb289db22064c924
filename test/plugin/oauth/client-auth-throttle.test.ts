// Client authentication throttling at the token endpoint (a hardening fix): per client_id, per
// address, on the RFC endpoints alike, across instances on Redis, with tokenErrorStatus: 200, and
// readable by a public client's page.
import t, { type Test } from 'tap'
import { addClient, addPublicClient, buildTestApp, obtainCode, SPA_ORIGIN, SPA_REDIRECT_URI, type TokenAnswer } from '../../helpers/app.ts'
import { startRedis } from '../../helpers/redis.ts'
import { assertTokenError, assertTokenSet, codeParams, tokenFrom } from '../../helpers/token-checks.ts'

const THROTTLED = /^too many failed client authentications; retry in (\d+) s$/

/** The throttle's answer: 96002 with `retry in N s` and `Retry-After: N`, N in 1..60. */
function assertThrottled (t: Test, answer: TokenAnswer, status = 429): void {
  assertTokenError(t, answer, 96002, status)
  const seconds = THROTTLED.exec(String(answer.body.error_description))?.[1]
  t.ok(seconds !== undefined, `description names the wait (${answer.raw})`)
  const n = Number(seconds)
  t.ok(n >= 1 && n <= 60, `N=${n} within 1..60`)
  t.equal(answer.headers['retry-after'], String(n), 'Retry-After is N')
}

// --- client authentication throttling ----------------------------------------------------------------

t.test('client authentication throttle: per client_id, even the right secret waits', async (t) => {
  const { app, store } = await buildTestApp(t, { clientAuthRateLimit: { perClient: 3, perAddress: 100 } })
  const victim = await addClient(store)
  const bystander = await addClient(store)
  const { code } = await obtainCode(app, victim.clientId)
  const { code: otherCode } = await obtainCode(app, bystander.clientId)
  for (let i = 1; i <= 3; i++) {
    assertTokenError(t, await tokenFrom(app, codeParams({ ...victim, clientSecret: `wrong${i}` }, code)), 96003, 401)
  }
  assertThrottled(t, await tokenFrom(app, codeParams(victim, code)))
  assertThrottled(t, await tokenFrom(app, codeParams(victim, code), '10.0.0.9'), 429)
  assertTokenSet(t, await tokenFrom(app, codeParams(bystander, otherCode)), { scope: '1 3 4 6' })

  // An unknown client_id is not a client to block: it counts for the address only.
  const unknown = { clientId: '1234567890123456789', clientSecret: 'x' }
  for (let i = 1; i <= 5; i++) assertTokenError(t, await tokenFrom(app, codeParams(unknown, 'c'), '10.0.0.7'), 96001, 401)
})

t.test('client authentication throttle: the RFC endpoints count alike and answer in RFC form', async (t) => {
  const { app, store } = await buildTestApp(t, { clientAuthRateLimit: { perClient: 2, perAddress: 100 } })
  const client = await addClient(store)
  const post = async (url: string, clientSecret: string) => await app.inject({ method: 'POST', url, payload: new URLSearchParams({ token: 'x', client_id: client.clientId, client_secret: clientSecret }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal((await post('/oauth2/revoke', 'wrong1')).statusCode, 401)
  t.equal((await post('/oauth2/introspect', 'wrong2')).statusCode, 401)
  for (const url of ['/oauth2/revoke', '/oauth2/introspect']) {
    const throttled = await post(url, client.clientSecret)
    t.equal(throttled.statusCode, 429, `${url}: even the right secret waits`)
    t.match(throttled.headers['retry-after'], /^\d+$/, 'with Retry-After in seconds')
    t.match(JSON.parse(throttled.body), { error: 'temporarily_unavailable', error_description: /^too many failed client authentications; retry in \d+ s$/ })
  }
})

t.test('client authentication throttle: per address, across clients; unknown ids count', async (t) => {
  const { app, store } = await buildTestApp(t, { clientAuthRateLimit: { perClient: 100, perAddress: 3 } })
  const clients = await Promise.all([1, 2, 3, 4].map(async () => await addClient(store)))
  const { code } = await obtainCode(app, clients[3]!.clientId)
  for (const client of clients.slice(0, 3)) {
    assertTokenError(t, await tokenFrom(app, codeParams({ ...client, clientSecret: 'wrong' }, 'c'), '10.1.1.1'), 96003, 401)
  }
  assertThrottled(t, await tokenFrom(app, codeParams(clients[3]!, code), '10.1.1.1'))
  assertTokenSet(t, await tokenFrom(app, codeParams(clients[3]!, code), '10.1.1.2'), { scope: '1 3 4 6' })

  const unknown = { clientId: '1234567890123456789', clientSecret: 'x' }
  for (let i = 1; i <= 3; i++) assertTokenError(t, await tokenFrom(app, codeParams(unknown, 'c'), '10.2.2.2'), 96001, 401)
  assertThrottled(t, await tokenFrom(app, codeParams(clients[0]!, 'c'), '10.2.2.2'))
})

t.test('client authentication throttle: counted across instances on Redis', async (t) => {
  const redis = await startRedis(t)
  const options = { store: 'redis' as const, redis, clientAuthRateLimit: { perClient: 3, perAddress: 100 } }
  const a = await buildTestApp(t, options)
  const b = await buildTestApp(t, options)
  const client = await addClient(a.store)
  const wrong = codeParams({ ...client, clientSecret: 'wrong' }, 'c')
  assertTokenError(t, await tokenFrom(a.app, wrong), 96003, 401)
  assertTokenError(t, await tokenFrom(b.app, wrong), 96003, 401)
  assertTokenError(t, await tokenFrom(a.app, wrong), 96003, 401)
  assertThrottled(t, await tokenFrom(b.app, codeParams(client, 'c')))
  assertThrottled(t, await tokenFrom(a.app, codeParams(client, 'c')))
})

t.test('client authentication throttle with tokenErrorStatus: 200', async (t) => {
  const { app, store } = await buildTestApp(t, { tokenErrorStatus: 200, clientAuthRateLimit: { perClient: 1, perAddress: 100 } })
  const client = await addClient(store)
  assertTokenError(t, await tokenFrom(app, codeParams({ ...client, clientSecret: 'wrong' }, 'c')), 96003, 200)
  // The option answers every token error with 200, this one included; Retry-After stays.
  assertThrottled(t, await tokenFrom(app, codeParams(client, 'c')), 200)
})

t.test('a throttled token request from a public client\'s page can read the wait', async (t) => {
  const { app, store } = await buildTestApp(t, { clientAuthRateLimit: { perClient: 100, perAddress: 1 } })
  const spa = await addPublicClient(store)
  const unknown = { clientId: '1234567890123456789', clientSecret: 'x' }
  assertTokenError(t, await tokenFrom(app, codeParams(unknown, 'c'), '10.3.3.3'), 96001, 401)
  const response = await app.inject({
    method: 'POST',
    url: '/oauth2/token',
    remoteAddress: '10.3.3.3',
    payload: new URLSearchParams({ grant_type: 'authorization_code', client_id: spa.clientId, redirect_uri: SPA_REDIRECT_URI, code: 'c', code_verifier: 'v'.repeat(43) }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: SPA_ORIGIN }
  })
  t.equal(response.statusCode, 429, 'a public client is throttled by address like any')
  t.equal(response.headers['access-control-allow-origin'], SPA_ORIGIN)
  t.match(response.headers['access-control-expose-headers'], /Retry-After/)
  t.match(response.headers['retry-after'], /^\d+$/)
})
