// The device grant (RFC 8628) through the gateway by inject, on the embedded store with a stepped
// clock: the device authorization endpoint's answers and refusals, the verification page (sign-in,
// code entry, confirmation, CSRF), every poll answer, and the wrong-code limits.
import t from 'tap'
import { addClient, addUser, buildTestApp, InjectBrowser } from '../../helpers/app.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { addDeviceClient, decideDevice, DEVICE_GRANT, pollDevice, startDevice, type DeviceAnswer } from '../../helpers/device.ts'

const ISSUER = 'https://accounts.example.com'

const START = Date.UTC(2026, 10, 26, 12)

t.test('the device authorization answer: codes, URIs, lifetime, interval', async (t) => {
  const { app, store } = await buildTestApp(t, { issuer: ISSUER })
  const { clientId } = await addDeviceClient(store)
  const { status, body, headers } = await startDevice(app, { client_id: clientId, scope: '1 3' })
  t.equal(status, 200)
  t.equal(headers['cache-control'], 'no-store')
  const answer = body as DeviceAnswer
  t.match(answer.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/, 'XXXX-XXXX from the consonants')
  t.equal(answer.verification_uri, `${ISSUER}/oauth2/device`)
  t.equal(answer.verification_uri_complete, `${ISSUER}/oauth2/device?user_code=${answer.user_code}`)
  t.same([answer.expires_in, answer.interval], [600, 5])
  t.ok(answer.device_code.length >= 60, 'a device code with 256 random bits')

  const metadata = (await app.inject('/.well-known/oauth-authorization-server')).json()
  t.equal(metadata.device_authorization_endpoint, `${ISSUER}/oauth2/device_authorization`)
  t.ok(metadata.grant_types_supported.includes(DEVICE_GRANT))
})

t.test('without an issuer there is no device grant', async (t) => {
  const { app, store } = await buildTestApp(t)
  const { clientId } = await addDeviceClient(store)
  t.equal((await startDevice(app, { client_id: clientId })).status, 404)
  t.equal((await app.inject('/oauth2/device')).statusCode, 404)
  const metadata = (await app.inject('/.well-known/oauth-authorization-server')).json()
  t.equal(metadata.device_authorization_endpoint, undefined)
  t.notOk(metadata.grant_types_supported.includes(DEVICE_GRANT))
  t.match(await pollDevice(app, { client_id: clientId, device_code: 'x' }), { status: 400, body: { error: 'unsupported_grant_type' } })
})

t.test('the device authorization endpoint refuses', async (t) => {
  const { app, store } = await buildTestApp(t, { issuer: ISSUER, deviceAuthorizationRateLimit: { perClient: 3, perAddress: 100 } })
  const { clientId: plain } = await addClient(store)
  const device = await addDeviceClient(store)
  const confidential = await addDeviceClient(store, { public: false })
  t.match(await startDevice(app, { client_id: plain, client_secret: 'wrong' }), { status: 401, body: { error: 'invalid_client' } })
  const { clientSecret } = await addClient(store)
  const registeredElse = await addClient(store)
  t.match(await startDevice(app, { client_id: registeredElse.clientId, client_secret: registeredElse.clientSecret }), { status: 400, body: { error: 'unauthorized_client' } }, 'a client not registered for the grant')
  t.ok(clientSecret)
  t.match(await startDevice(app, { client_id: confidential.clientId }), { status: 400, body: { error: 'invalid_request' } }, 'a confidential client without its secret')
  t.equal((await startDevice(app, { client_id: confidential.clientId, client_secret: confidential.clientSecret! })).status, 200, 'with it')
  t.match(await startDevice(app, { client_id: device.clientId, scope: '1 9' }), { status: 400, body: { error: 'invalid_scope' } })
  t.equal((await startDevice(app, { client_id: device.clientId })).status, 200)
  t.equal((await startDevice(app, { client_id: device.clientId })).status, 200)
  const over = await startDevice(app, { client_id: device.clientId })
  t.match(over, { status: 429, body: { error: 'temporarily_unavailable' } }, 'past the per-client limit')
  t.ok(Number(over.headers['retry-after']) > 0)
})

t.test('the device authorization endpoint is limited per address', async (t) => {
  const { app, store } = await buildTestApp(t, { issuer: ISSUER, deviceAuthorizationRateLimit: { perClient: 100, perAddress: 2 } })
  const { clientId } = await addDeviceClient(store)
  t.equal((await startDevice(app, { client_id: clientId })).status, 200)
  t.equal((await startDevice(app, { client_id: clientId })).status, 200)
  t.equal((await startDevice(app, { client_id: clientId })).status, 429)
})

t.test('polls: pending, slow_down, approved once, then invalid_grant', async (t) => {
  const { now: clock, step } = steppedClock(START)
  const { app, store } = await buildTestApp(t, { issuer: ISSUER, clock })
  const events: string[] = []
  app.macgate.events.on('audit', (event) => { if (event.type.startsWith('device.')) events.push(event.type) })
  const { clientId } = await addDeviceClient(store)
  const started = (await startDevice(app, { client_id: clientId, scope: '1 3' })).body as DeviceAnswer
  const poll = async () => await pollDevice(app, { client_id: clientId, device_code: started.device_code })

  t.match(await poll(), { status: 400, body: { error: 'authorization_pending' } })
  step(3000)
  t.match(await poll(), { status: 400, body: { error: 'slow_down' } }, '3 s after the last poll, the interval 5 s')
  step(9500)
  t.match(await poll(), { status: 400, body: { error: 'authorization_pending' } }, 'the interval now 10 s; 9.5 s is within the second of tolerance')
  step(5000)
  t.match(await poll(), { status: 400, body: { error: 'slow_down' } }, 'the interval stayed 10 s for this code')

  const user = await addUser(store)
  const done = await decideDevice(new InjectBrowser(app), user, started.user_code.toLowerCase().replace('-', ''), 'allow')
  t.equal(done.statusCode, 200)
  t.match(done.body, /Device connected/)

  step(15_000)
  const issued = await poll()
  t.equal(issued.status, 200)
  t.match(issued.body, { token_type: 'mac', scope: '1 3', mac_algorithm: 'HmacSha1', expires_in: 7_776_000 })
  t.type(issued.body.refresh_token, 'string')
  t.type(issued.body.openId, 'string')
  step(15_000)
  t.match(await poll(), { status: 400, body: { error: 'invalid_grant' } }, 'redeemed once')
  t.same(events, ['device.started', 'device.approved', 'device.issued'])

  // The token works, and refreshes at the standard endpoint.
  const refreshed = await app.inject({
    method: 'POST',
    url: '/oauth2/rfc/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'refresh_token', client_id: clientId, refresh_token: issued.body.refresh_token }).toString()
  })
  t.equal(refreshed.statusCode, 200, 'the refresh token rotates')

  // The apps page lists the app: the user can remove it.
  t.ok((await store.listConsents(user.userId)).some((consent) => consent.clientId === clientId))
})

t.test('polls: denied, expired, another client, a forged code; the Xiaomi endpoint has no device grant', async (t) => {
  const { now: clock, step } = steppedClock(START)
  const { app, store } = await buildTestApp(t, { issuer: ISSUER, clock })
  const { clientId } = await addDeviceClient(store)
  const other = await addDeviceClient(store)
  const user = await addUser(store)
  const browser = new InjectBrowser(app)

  const denied = (await startDevice(app, { client_id: clientId })).body as DeviceAnswer
  const done = await decideDevice(browser, user, denied.user_code, 'deny')
  t.match(done.body, /Access denied/)
  t.match(await pollDevice(app, { client_id: clientId, device_code: denied.device_code }), { status: 400, body: { error: 'access_denied' } })
  t.match(await pollDevice(app, { client_id: other.clientId, device_code: denied.device_code }), { status: 400, body: { error: 'invalid_grant' } }, 'another client')
  t.match(await pollDevice(app, { client_id: clientId, device_code: denied.device_code.slice(0, -2) + 'xx' }), { status: 400, body: { error: 'invalid_grant' } }, 'a forged code')
  t.match(await pollDevice(app, { client_id: clientId }), { status: 400, body: { error: 'invalid_request' } }, 'no device_code')

  const late = (await startDevice(app, { client_id: clientId })).body as DeviceAnswer
  step(600_000)
  t.match(await pollDevice(app, { client_id: clientId, device_code: late.device_code }), { status: 400, body: { error: 'expired_token' } })
  const entered = await decideDevice(browser, user, late.user_code, 'allow')
  t.equal(entered.statusCode, 400, 'an expired code cannot be entered')
  t.match(entered.body, /not valid, or it has expired/)

  // Approved, then removed on the apps page before the device polled: no token.
  const removed = (await startDevice(app, { client_id: clientId, scope: '1' })).body as DeviceAnswer
  await decideDevice(browser, user, removed.user_code, 'allow')
  await store.forgetConsent(user.userId, clientId)
  step(10_000)
  t.match(await pollDevice(app, { client_id: clientId, device_code: removed.device_code }), { status: 400, body: { error: 'access_denied' } }, 'the app\'s access removed since the approval')

  const xiaomi = await app.inject({ method: 'POST', url: '/oauth2/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ grant_type: DEVICE_GRANT, client_id: clientId, device_code: late.device_code }).toString() })
  t.match(xiaomi.body, /"error":96006/)
})

t.test('the verification page: sign-in first, the code prefilled but confirmed, CSRF', async (t) => {
  const { now: clock, step } = steppedClock(START)
  const { app, store } = await buildTestApp(t, { issuer: ISSUER, clock })
  const { clientId } = await addDeviceClient(store, { name: 'Kitchen Radio' })
  const started = (await startDevice(app, { client_id: clientId, scope: '1 3' })).body as DeviceAnswer
  const user = await addUser(store)
  const browser = new InjectBrowser(app)
  const complete = new URL(started.verification_uri_complete)

  const toSignIn = await browser.get(complete.pathname + complete.search)
  t.equal(toSignIn.statusCode, 302)
  const signIn = new URL(toSignIn.headers.location!, 'http://x')
  t.equal(signIn.searchParams.get('return_to'), `/oauth2/device?user_code=${started.user_code}`)
  const back = await browser.signIn(user.username, user.password, signIn.searchParams.get('return_to')!)
  t.equal(back.statusCode, 303)
  t.equal(back.headers.location, `/oauth2/device?user_code=${started.user_code}`, 'back with the code')

  const entry = await browser.get(back.headers.location!)
  t.match(entry.body, new RegExp(`value="${started.user_code}"`), 'prefilled, not decided')
  t.match(await pollDevice(app, { client_id: clientId, device_code: started.device_code }), { body: { error: 'authorization_pending' } })

  const forged = await browser.post('/oauth2/device', { user_code: started.user_code, decision: 'allow' }, { csrf: false })
  t.equal(forged.statusCode, 403, 'no CSRF token, no decision')

  const confirm = await browser.post('/oauth2/device', { user_code: started.user_code })
  t.equal(confirm.statusCode, 200)
  t.match(confirm.body, /Authorize Kitchen Radio/)
  t.match(confirm.body, /<li>Profile<\/li><li>Open ID<\/li>/, 'the permissions in the consent page\'s words')
  t.match(confirm.body, /Only allow this if the code is shown on a device you are using right now/)
  t.match(confirm.body, new RegExp(started.user_code))
  step(5000)
  t.match(await pollDevice(app, { client_id: clientId, device_code: started.device_code }), { body: { error: 'authorization_pending' } }, 'still undecided')

  t.equal((await browser.post('/oauth2/device', { user_code: started.user_code, decision: 'maybe' })).statusCode, 400)
  t.equal((await browser.post('/oauth2/device', { user_code: started.user_code, decision: 'allow' })).statusCode, 200)
  const again = await browser.post('/oauth2/device', { user_code: started.user_code, decision: 'deny' })
  t.equal(again.statusCode, 400, 'decided once')

  const signedOut = new InjectBrowser(app)
  await signedOut.get('/oauth2/signin')
  const post = await signedOut.post('/oauth2/device', { user_code: started.user_code })
  t.equal(post.statusCode, 303, 'signed out: to the sign-in')
})

t.test('wrong codes are limited per session, per address and across the deployment', async (t) => {
  const { app, store } = await buildTestApp(t, { issuer: ISSUER, userCodeGuessLimit: { perSession: 3, perAddress: 5, perDeployment: 7 } })
  const { clientId } = await addDeviceClient(store)
  const started = (await startDevice(app, { client_id: clientId })).body as DeviceAnswer
  const guesser = async () => {
    const user = await addUser(store)
    const browser = new InjectBrowser(app)
    await browser.signIn(user.username, user.password)
    await browser.get('/oauth2/device')
    return browser
  }
  const guess = async (browser: InjectBrowser, code = 'BBBB-BBBB') => await browser.post('/oauth2/device', { user_code: code })

  const first = await guesser()
  for (let i = 0; i < 3; i++) t.equal((await guess(first)).statusCode, 400, `wrong code ${i + 1}`)
  const refused = await guess(first, started.user_code)
  t.equal(refused.statusCode, 429, 'past the session\'s limit even the right code is refused')
  t.ok(Number(refused.headers['retry-after']) > 0)
  t.match(refused.body, /Too many wrong codes/)

  const second = await guesser()
  t.equal((await guess(second, 'not a code')).statusCode, 400, 'a malformed code counts too')
  t.equal((await guess(second)).statusCode, 400)
  t.equal((await guess(second)).statusCode, 429, 'the address\'s limit: 5 wrong codes from it')

  // Another address (a proxy's X-Forwarded-For is not trusted: inject's remoteAddress instead).
  const third = await guesser()
  const elsewhere = async (code: string) => await app.inject({
    method: 'POST',
    url: '/oauth2/device',
    remoteAddress: '10.9.8.7',
    headers: { cookie: third.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: third.lastCsrf, user_code: code }).toString()
  })
  t.equal((await elsewhere('CCCC-CCCC')).statusCode, 400)
  t.equal((await elsewhere('CCCC-CCCC')).statusCode, 400)
  t.equal((await elsewhere(started.user_code)).statusCode, 429, 'the deployment\'s limit: 7 wrong codes in all')
})

t.test('a store outage: 503 at every step, never a 500', async (t) => {
  const { app, store, redis } = await buildTestApp(t, { store: 'redis', issuer: ISSUER })
  const { clientId } = await addDeviceClient(store)
  const started = (await startDevice(app, { client_id: clientId })).body as DeviceAnswer
  const user = await addUser(store)
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  await browser.get('/oauth2/device')
  await redis!.stop()
  t.match(await startDevice(app, { client_id: clientId }), { status: 503, body: { error: 'temporarily_unavailable' } })
  t.match(await pollDevice(app, { client_id: clientId, device_code: started.device_code }), { status: 503, body: { error: 'temporarily_unavailable' } })
  const page = await browser.post('/oauth2/device', { user_code: started.user_code })
  t.equal(page.statusCode, 503, 'the page: the service is unavailable')
  t.match(page.body, /96000/)
})

t.test('a request without a body', async (t) => {
  const { app } = await buildTestApp(t, { issuer: ISSUER })
  const empty = await app.inject({ method: 'POST', url: '/oauth2/device_authorization' })
  t.equal(empty.statusCode, 400)
  t.match(empty.json(), { error: 'invalid_request' })
})
