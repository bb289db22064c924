// The account pages: sign-in, CSRF, the session cookie, return_to, rate limiting, session fixation.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { addClient, addUser, authorizeUrl, buildTestApp, InjectBrowser, REDIRECT_URI } from '../../helpers/app.ts'

const FAILED = 'Wrong username or password.'

/** True when `cookie` names a signed-in user: the authorization request then shows its page. */
async function signedIn (app: FastifyInstance, clientId: string, cookie: string): Promise<boolean> {
  const response = await app.inject({ url: authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' }), headers: { cookie } })
  if (response.statusCode === 302 && String(response.headers.location).startsWith('/oauth2/signin?')) return false
  if (response.statusCode === 200 && response.body.includes('id="account"')) return true
  throw new Error(`unexpected answer ${response.statusCode}`)
}

function sessionCookie (response: LightMyRequestResponse): string | undefined {
  const header = response.headers['set-cookie']
  return (Array.isArray(header) ? header : header === undefined ? [] : [header]).find((cookie) => cookie.startsWith('macgate_session='))
}

/** The page with the parts that change per request (CSRF token, echoed username) blanked. */
function stable (body: string): string {
  return body.replace(/name="_csrf" value="[^"]*"/, '').replace(/name="username"([^>]*) value="[^"]*"/, 'name="username"$1')
}

async function setup (t: Test, options: Parameters<typeof buildTestApp>[1] = {}) {
  const { app, store } = await buildTestApp(t, options)
  const { clientId } = await addClient(store)
  const user = await addUser(store)
  return { app, store, clientId, user, browser: new InjectBrowser(app) }
}

t.test('the sign-in page', async (t) => {
  const { browser } = await setup(t)
  const url = authorizeUrl({ client_id: '1', redirect_uri: REDIRECT_URI })
  const page = await browser.get(`/oauth2/signin?${new URLSearchParams({ return_to: url }).toString()}`)
  t.equal(page.statusCode, 200)
  t.ok(page.body.includes('<form method="post" action="/oauth2/signin">'))
  t.match(page.body, /<input type="hidden" name="_csrf" value="[^"]+">/)
  t.ok(page.body.includes(`name="return_to" value="${url.replaceAll('&', '&amp;')}"`))
  t.ok(page.body.includes('name="username"') && page.body.includes('name="password" type="password"'))
  for (const [name, value] of Object.entries({ 'cache-control': 'no-store', 'x-frame-options': 'DENY', 'content-security-policy': "frame-ancestors 'none'", 'referrer-policy': 'no-referrer' })) {
    t.equal(page.headers[name], value, name)
  }
})

t.test('a wrong password or an unknown user: the same 401 page, no session user', async (t) => {
  const { app, clientId, user, browser } = await setup(t)
  const wrong = await browser.signIn(user.username, 'wrong password!')
  t.equal(wrong.statusCode, 401)
  t.ok(wrong.body.includes(`<p class="error" role="alert">${FAILED}</p>`))
  t.equal(wrong.headers.location, undefined)
  t.equal(wrong.headers['x-frame-options'], 'DENY')
  t.notOk(await signedIn(app, clientId, browser.cookie), 'not signed in')

  const unknown = await browser.signIn('nobody-here', user.password)
  t.equal(unknown.statusCode, 401)
  t.equal(stable(unknown.body), stable(wrong.body), 'the same answer as a wrong password')
  t.notOk(await signedIn(app, clientId, browser.cookie))

  const empty = await browser.signIn('', '')
  t.equal(empty.statusCode, 401)
  const right = await browser.signIn(user.username, user.password)
  t.equal(right.statusCode, 200, 'no return_to: a signed-in page')
  t.ok(await signedIn(app, clientId, browser.cookie), 'control: the right password signs in')
})

t.test('CSRF: sign-in without a valid token is 403', async (t) => {
  const { app, clientId, user, browser } = await setup(t)
  await browser.get('/oauth2/signin')
  const other = new InjectBrowser(app)
  await other.get('/oauth2/signin')
  const form = { username: user.username, password: user.password }
  for (const [name, csrf] of [['no token', undefined], ['a wrong token', 'x'.repeat(52)], ['another session\'s token', other.lastCsrf]] as const) {
    const response = await browser.post('/oauth2/signin', csrf === undefined ? form : { ...form, _csrf: csrf }, { csrf: false })
    t.equal(response.statusCode, 403, name)
    t.equal(response.headers.location, undefined)
    t.notOk(await signedIn(app, clientId, browser.cookie), `${name}: not signed in`)
  }
  // Without any session at all.
  const bare = await app.inject({ method: 'POST', url: '/oauth2/signin', payload: new URLSearchParams(form).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(bare.statusCode, 403)
  t.equal(sessionCookie(bare), undefined, 'no session handed out')
})

t.test('CSRF: the decision without a valid token is 403 and issues nothing', async (t) => {
  const { store, clientId, user, browser } = await setup(t)
  await browser.signIn(user.username, user.password)
  const url = authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1' })
  t.equal((await browser.get(url)).statusCode, 200)
  for (const form of [{ decision: 'allow' }, { decision: 'allow', _csrf: 'forged' }] as Array<Record<string, string>>) {
    const response = await browser.post(url, form, { csrf: false })
    t.equal(response.statusCode, 403)
    t.equal(response.headers.location, undefined, 'no code')
    t.equal(/<span id="error-code">(\d+)<\/span>/.exec(response.body)?.[1], '96002')
  }
  t.same(await store.getConsent(user.userId, clientId), [], 'nothing granted')
  t.equal((await browser.post(url, { decision: 'allow' })).statusCode, 303, 'control: with the token it goes through')
})

t.test('the session cookie', async (t) => {
  const { browser, user } = await setup(t)
  const page = await browser.get('/oauth2/signin')
  const cookie = sessionCookie(page)
  t.match(cookie, /; HttpOnly/)
  t.match(cookie, /; SameSite=Lax/)
  t.match(cookie, /; Path=\/oauth2/)
  t.notMatch(cookie, /; Secure/, 'plain HTTP unless secureCookies')
  t.match(sessionCookie(await browser.post('/oauth2/signin', { username: user.username, password: user.password })), /; HttpOnly.*; SameSite=Lax|; SameSite=Lax.*; HttpOnly/)

  const secure = await setup(t, { secureCookies: true })
  t.match(sessionCookie(await secure.browser.get('/oauth2/signin')), /; Secure/)
})

t.test('return_to only leads back to the authorization endpoint', async (t) => {
  const { app, clientId, user } = await setup(t)
  const good = authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' })
  const back = await new InjectBrowser(app).signIn(user.username, user.password, good)
  t.equal(back.statusCode, 303)
  t.equal(back.headers.location, good)

  for (const bad of ['https://evil.example', '//evil.example', '/\\evil.example', '/oauth2/authorizeX', '/oauth2/authorize', 'https://evil.example/oauth2/authorize?x=1', '/other?x=/oauth2/authorize?']) {
    const browser = new InjectBrowser(app)
    const form = await browser.get(`/oauth2/signin?${new URLSearchParams({ return_to: bad }).toString()}`)
    t.ok(form.body.includes('name="return_to" value=""'), `${bad}: not put in the form`)
    const response = await browser.post('/oauth2/signin', { username: user.username, password: user.password, return_to: bad })
    t.equal(response.statusCode, 200, `${bad}: the signed-in page`)
    t.equal(response.headers.location, undefined, `${bad}: no redirect`)
  }

  // A return_to that could not be a header value (CR/LF, non-ASCII) is refused, not a 500.
  for (const bad of ['/oauth2/authorize?\r\nSet-Cookie: a=b', '/oauth2/authorize?s=中']) {
    const browser = new InjectBrowser(app)
    await browser.get('/oauth2/signin')
    const response = await browser.post('/oauth2/signin', { username: user.username, password: user.password, return_to: bad })
    t.not(response.statusCode, 500, `${JSON.stringify(bad)}: not a server error`)
    t.notMatch(String(response.headers['set-cookie'] ?? ''), /a=b/, 'no header injection')
  }
})

t.test('rate limiting: the 4th sign-in in a minute is refused', async (t) => {
  const { app, clientId, user, browser } = await setup(t, { signInRateLimit: 3 })
  await browser.get('/oauth2/signin')
  for (let attempt = 1; attempt <= 3; attempt++) {
    t.equal((await browser.post('/oauth2/signin', { username: user.username, password: `wrong ${attempt}` })).statusCode, 401, `attempt ${attempt}`)
  }
  const limited = await browser.post('/oauth2/signin', { username: user.username, password: 'wrong 4' })
  t.equal(limited.statusCode, 429)
  t.match(limited.headers['content-type'], /^text\/html/)
  t.ok(limited.body.includes('Too many attempts'), 'an HTML page')
  t.equal(limited.headers['x-frame-options'], 'DENY')
  const right = await browser.post('/oauth2/signin', { username: user.username, password: user.password })
  t.equal(right.statusCode, 429, 'even the right password waits')
  t.notOk(await signedIn(app, clientId, browser.cookie))
})

t.test('session fixation: sign-in replaces the session', async (t) => {
  const { app, clientId, user, browser } = await setup(t)
  await browser.get('/oauth2/signin')
  const before = browser.cookie
  t.match(before, /^macgate_session=.+/)
  const response = await browser.post('/oauth2/signin', { username: user.username, password: user.password })
  t.ok(sessionCookie(response) !== undefined, 'a new cookie is set at sign-in')
  t.not(browser.cookie, before, 'the cookie value changed')
  t.notOk(await signedIn(app, clientId, before), 'the cookie planted before sign-in carries no user')
  t.ok(await signedIn(app, clientId, browser.cookie))
})

t.test('a session whose user no longer exists does not count', async (t) => {
  // The store has no way to delete a user. Instead, a session cookie made by one instance is shown
  // to instances sharing the secret whose stores lack the user, or hold another user of that name.
  const secret = 'a shared secret for this test only'
  const first = await setup(t, { secret })
  await first.browser.signIn(first.user.username, first.user.password)
  t.ok(await signedIn(first.app, first.clientId, first.browser.cookie), 'control: signed in where the user exists')

  const empty = await buildTestApp(t, { secret })
  const { client } = await addClient(empty.store)
  t.notOk(await signedIn(empty.app, client.id, first.browser.cookie), 'the user is gone')

  const renamed = await buildTestApp(t, { secret })
  const other = await addClient(renamed.store)
  await addUser(renamed.store, first.user.username)
  t.notOk(await signedIn(renamed.app, other.clientId, first.browser.cookie), 'the name now belongs to another user')
})
