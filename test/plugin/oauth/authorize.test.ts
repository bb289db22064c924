// Contract section 3, the user's part and success: sign-in, confirmation, skip_confirm, the code
// and implicit answers, default scopes, PKCE, and several registered redirect URIs.
import { createHash, randomBytes } from 'node:crypto'
import t from 'tap'
import { escapeHtml } from '../../../plugin/http/html.ts'
import { addClient, addUser, authorizeAndAllow, authorizeUrl, buildTestApp, callToken, InjectBrowser, REDIRECT_URI, signedInBrowser } from '../../helpers/app.ts'

const CODE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22,}$/ // ≥ 128 random bits after the grant id

function fragmentOf (location: string): URLSearchParams {
  return new URLSearchParams(location.slice(location.indexOf('#') + 1))
}

for (const kind of ['memory', 'redis'] as const) {
  t.test(`code grant through sign-in and confirmation (${kind})`, async (t) => {
    const { app, store } = await buildTestApp(t, { store: kind })
    const { clientId, clientSecret } = await addClient(store, { name: 'Photo Printer' })
    const user = await addUser(store)
    const browser = new InjectBrowser(app)
    const url = authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1 3', state: 's 1/é' })

    const first = await browser.get(url)
    t.equal(first.statusCode, 302, 'not signed in: a redirect straight from the GET')
    t.equal(first.headers.location, `/oauth2/signin?${new URLSearchParams({ return_to: url }).toString()}`)
    const form = await browser.get(String(first.headers.location))
    t.equal(form.statusCode, 200)
    t.ok(form.body.includes(`name="return_to" value="${escapeHtml(url)}"`), 'the sign-in form returns to the request')
    const signedIn = await browser.post('/oauth2/signin', { username: user.username, password: user.password, return_to: url })
    t.equal(signedIn.statusCode, 303)
    t.equal(signedIn.headers.location, url, 'back into the same authorization request')

    const page = await browser.get(url)
    t.equal(page.statusCode, 200, 'a first-time grant shows the confirmation page')
    t.ok(page.body.includes(`<strong id="account">${user.username}</strong>`), 'shows the account')
    t.ok(page.body.includes('<h1>Authorize Photo Printer</h1>'), 'shows the app name')
    t.ok(page.body.includes('<ul id="permissions"><li>Profile</li><li>Open ID</li></ul>'), 'permissions by registry description')
    t.ok(page.body.includes('<button type="submit" name="decision" value="allow">Allow</button>'), 'Allow button')
    t.ok(page.body.includes('<button type="submit" name="decision" value="deny" class="secondary">Deny</button>'), 'Deny button')
    t.ok(page.body.includes(`<form method="post" action="${escapeHtml(url)}">`), 'the decision goes to the same request')

    const allowed = await browser.post(url, { decision: 'allow' })
    t.equal(allowed.statusCode, 303, 'after a form POST: 303')
    const location = String(allowed.headers.location)
    t.ok(location.startsWith(`${REDIRECT_URI}?code=`), location)
    const query = new URL(location).searchParams
    t.same([...query.keys()], ['code', 'state'])
    t.equal(query.get('state'), 's 1/é')
    t.match(query.get('code'), CODE)
    t.same(await store.getConsent(user.userId, clientId), ['1', '3'], 'the grant is remembered')

    // The client id string round-trips through the code record (no precision loss).
    const answer = await callToken(app, { client_id: clientId, client_secret: clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code: query.get('code')! })
    t.equal(answer.status, 200)
    t.equal(answer.body.scope, '1 3')
  })

  t.test(`skip_confirm skips only what this user already granted (${kind})`, async (t) => {
    const { app, store } = await buildTestApp(t, { store: kind })
    const { clientId } = await addClient(store)
    const other = await addClient(store)
    const user = await addUser(store)
    const browser = new InjectBrowser(app)
    await browser.signIn(user.username, user.password)
    const url = (scope: string, extra: Record<string, string> = {}) => authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope, state: 'k', ...extra })

    t.equal((await browser.get(url('1 3', { skip_confirm: 'true' }))).statusCode, 200, 'first time: the page even with skip_confirm')
    const first = new URL(String((await browser.post(url('1 3', { skip_confirm: 'true' }), { decision: 'allow' })).headers.location))
    for (const scope of ['1 3', '3 1', '3']) {
      const response = await browser.get(url(scope, { skip_confirm: 'true' }))
      t.equal(response.statusCode, 302, `granted "${scope}": straight to the client with 302`)
      const query = new URL(String(response.headers.location)).searchParams
      t.match(query.get('code'), CODE)
      t.not(query.get('code'), first.searchParams.get('code'), 'a fresh code')
      t.equal(query.get('state'), 'k')
    }
    t.equal((await browser.get(url('1 3 4', { skip_confirm: 'true' }))).statusCode, 200, 'a wider scope: the page again')
    t.equal((await browser.get(authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', skip_confirm: 'true' }))).statusCode, 200, 'no scope means all the client\'s scopes: wider')
    t.equal((await browser.get(url('1 3'))).statusCode, 200, 'without skip_confirm: the page')
    t.equal((await browser.get(url('1 3', { skip_confirm: 'false' }))).statusCode, 200, 'skip_confirm=false: the page')
    t.equal((await browser.get(url('1 3', { skip_confirm: 'true', client_id: other.clientId }))).statusCode, 200, 'another client: the page')
  })

  t.test(`implicit grant: the token set in the fragment (${kind})`, async (t) => {
    const { app, store } = await buildTestApp(t, { store: kind })
    const { clientId } = await addClient(store)
    const user = await addUser(store)
    const state = 'a b&c=d é'
    const location = String((await authorizeAndAllowRaw(app, user, { client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'token', scope: '1 3', state })).headers.location)
    t.ok(location.startsWith(`${REDIRECT_URI}#access_token=`), 'nothing in the query, all in the fragment')
    t.equal(new URL(location).search, '')
    t.match(location, /#access_token=[^&]+&token_type=mac&expires_in=7776000&scope=1\+3&mac_key=[^&]+&mac_algorithm=HmacSha1&state=/)
    const fragment = fragmentOf(location)
    t.same([...fragment.keys()], ['access_token', 'token_type', 'expires_in', 'scope', 'mac_key', 'mac_algorithm', 'state'], 'no refresh_token, no openId')
    t.equal(fragment.get('state'), state)
    t.match(fragment.get('access_token'), /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43,}$/, '≥ 256 random bits')
    t.match(fragment.get('mac_key'), /^[A-Za-z0-9_-]{27,}$/, 'mac_key ≥ 160 bits')
  })
}

/** Signs a new browser in and posts allow; the raw answer. */
async function authorizeAndAllowRaw (app: Awaited<ReturnType<typeof buildTestApp>>['app'], user: { username: string, password: string }, params: Record<string, string>) {
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  return await browser.decide(authorizeUrl(params), 'allow')
}

t.test('no scope parameter: the client\'s scopes', async (t) => {
  const { app, store } = await buildTestApp(t)
  const { clientId, clientSecret } = await addClient(store, { scope: '1 3 4 6' })
  const user = await addUser(store)
  const browser = await signedInBrowser(app, user)
  const base = { client_id: clientId, redirect_uri: REDIRECT_URI }
  const page = await browser.get(authorizeUrl({ ...base, response_type: 'token' }))
  t.ok(page.body.includes('<ul id="permissions"><li>Profile</li><li>Open ID</li><li>Phone number</li><li>Email address</li></ul>'))
  const implicit = await authorizeAndAllow(browser, user, { ...base, response_type: 'token' })
  t.equal(fragmentOf(implicit.href).get('scope'), '1 3 4 6')
  const code = (await authorizeAndAllow(browser, user, { ...base, response_type: 'code' })).searchParams.get('code')!
  const answer = await callToken(app, { ...base, client_secret: clientSecret, grant_type: 'authorization_code', code })
  t.equal(answer.body.scope, '1 3 4 6')
  // Runs of spaces collapse, duplicates are dropped.
  const messy = await authorizeAndAllow(browser, user, { ...base, response_type: 'token', scope: '3  1 3 ' })
  t.same(fragmentOf(messy.href).get('scope')?.split(' ').sort(), ['1', '3'])
})

t.test('the confirmation page escapes the app name; "use another account"', async (t) => {
  const { app, store } = await buildTestApp(t)
  const { clientId } = await addClient(store, { name: '<b>Evil & "Co"</b>' })
  const first = await addUser(store)
  const second = await addUser(store)
  const browser = new InjectBrowser(app)
  await browser.signIn(first.username, first.password)
  const url = authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1', state: 'x' })
  const page = await browser.get(url)
  t.ok(page.body.includes('Authorize &lt;b&gt;Evil &amp; &quot;Co&quot;&lt;/b&gt;'))
  t.notOk(page.body.includes('<b>Evil'))
  t.ok(page.body.includes(`<form method="post" action="/oauth2/signout"><input type="hidden" name="_csrf" value="${browser.lastCsrf}"><input type="hidden" name="return_to" value="${escapeHtml(url)}">`))

  const signedOut = await browser.post('/oauth2/signout', { return_to: url })
  t.equal(signedOut.statusCode, 303)
  t.equal(signedOut.headers.location, `/oauth2/signin?${new URLSearchParams({ return_to: url }).toString()}`, 'to sign-in, same return_to')
  const again = await browser.get(url)
  t.equal(again.statusCode, 302, 'the session is cleared')
  t.match(again.headers.location, /^\/oauth2\/signin\?/)
  const back = await browser.signIn(second.username, second.password, url)
  t.equal(back.headers.location, url)
  t.ok((await browser.get(url)).body.includes(`<strong id="account">${second.username}</strong>`), 'now the other account')
})

t.test('an Allow posted after the session ended: back to sign-in, no code', async (t) => {
  const { app, store } = await buildTestApp(t)
  const { clientId } = await addClient(store)
  const user = await addUser(store)
  const browser = new InjectBrowser(app)
  const url = authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1', state: 'x' })
  await browser.signIn(user.username, user.password)
  t.equal((await browser.get(url)).statusCode, 200, 'the consent page, with its CSRF token')
  // Signed out in another tab: the session keeps its CSRF secret but no user.
  await browser.post('/oauth2/signout', {})
  await browser.get(`/oauth2/signin?${new URLSearchParams({ return_to: url }).toString()}`)
  const allowed = await browser.post(url, { decision: 'allow' })
  t.equal(allowed.statusCode, 303, 'a 303 after the POST')
  t.equal(allowed.headers.location, `/oauth2/signin?${new URLSearchParams({ return_to: url }).toString()}`, 'to sign-in, returning to the request')
})

t.test('PKCE: S256 only', async (t) => {
  const { app, store } = await buildTestApp(t)
  const { clientId, clientSecret } = await addClient(store)
  const pkce = await addClient(store, { requirePkce: true })
  const user = await addUser(store)
  const verifier = randomBytes(32).toString('base64url')
  const challenge = createHash('sha256').update(verifier).digest('base64url')
  const base = { client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', state: 's' }
  const browser = new InjectBrowser(app)
  const refused = async (params: Record<string, string>) => {
    const response = await app.inject({ url: authorizeUrl(params) })
    return new URL(String(response.headers.location), 'http://host.invalid').searchParams.get('error')
  }
  t.equal(await refused({ ...base, code_challenge: verifier, code_challenge_method: 'plain' }), '96002', 'plain refused')
  t.equal(await refused({ ...base, code_challenge: challenge }), '96002', 'no method means plain: refused')
  t.equal(await refused({ ...base, code_challenge_method: 'S256' }), '96002', 'method without challenge')
  for (const bad of [challenge.slice(1), `${challenge}A`, `${challenge.slice(1)}+`, `${challenge.slice(1)}=`]) {
    t.equal(await refused({ ...base, code_challenge: bad, code_challenge_method: 'S256' }), '96002', `malformed challenge ${bad}`)
  }
  t.equal(await refused({ ...base, client_id: pkce.clientId }), '96002', 'required by the client')

  const location = await authorizeAndAllow(browser, user, { ...base, client_id: pkce.clientId, code_challenge: challenge, code_challenge_method: 'S256' })
  const code = location.searchParams.get('code')!
  t.match(code, CODE, 'S256 accepted')
  const exchange = { client_id: pkce.clientId, client_secret: pkce.clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code }
  t.equal((await callToken(app, { ...exchange, code_verifier: verifier })).status, 200, 'the verifier redeems it')
  const bound = (await authorizeAndAllow(browser, user, { ...base, code_challenge: challenge, code_challenge_method: 'S256' })).searchParams.get('code')!
  const without = await callToken(app, { ...exchange, client_id: clientId, client_secret: clientSecret, code: bound })
  t.equal(without.status, 400, 'the challenge is enforced at the token endpoint')
  t.equal(without.body.access_token, undefined)
})

t.test('several registered redirect URIs; extra query data kept', async (t) => {
  const { app, store } = await buildTestApp(t)
  const loopback = 'http://127.0.0.1:8080/cb'
  const { clientId, clientSecret } = await addClient(store, { redirectUris: [REDIRECT_URI, loopback] })
  const user = await addUser(store)
  const browser = new InjectBrowser(app)
  const base = { client_id: clientId, response_type: 'code', state: 's' }

  const first = await authorizeAndAllow(browser, user, { ...base, redirect_uri: `${REDIRECT_URI}?x=1` })
  t.ok(first.href.startsWith(`${REDIRECT_URI}?x=1&code=`), first.href)
  t.same([...first.searchParams.keys()], ['x', 'code', 'state'])

  const second = await authorizeAndAllow(browser, user, { ...base, redirect_uri: `${loopback}?y=2` })
  t.ok(second.href.startsWith(`${loopback}?y=2&code=`), second.href)
  const exchange = { client_id: clientId, client_secret: clientSecret, grant_type: 'authorization_code' }
  const ok = await callToken(app, { ...exchange, redirect_uri: loopback, code: second.searchParams.get('code')! })
  t.equal(ok.status, 200, 'exchanged with the URI it was issued for')
  const third = await authorizeAndAllow(browser, user, { ...base, redirect_uri: loopback })
  const crossed = await callToken(app, { ...exchange, redirect_uri: REDIRECT_URI, code: third.searchParams.get('code')! })
  t.equal(crossed.body.error, 96004, 'the other registered URI does not redeem it')

  // Another port on the loopback IP literal matches (RFC 8252 §7.3, contract §12: native-apps.test.ts).
  for (const uri of ['http://localhost:8080/cb', 'http://127.0.0.1:8081/other', 'https://127.0.0.1:8080/cb']) {
    const response = await browser.get(authorizeUrl({ ...base, redirect_uri: uri }))
    t.equal(response.statusCode, 400, `${uri} does not match`)
    t.equal(response.headers.location, undefined)
  }
})
