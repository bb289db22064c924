// Contract section 3, step 1 (no redirect: an HTML page) and step 2 (errors redirected to the
// request's own redirect_uri), and the redirect_uri matching rules of section 2.
import type { LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { addClient, addUser, authorizeUrl, buildTestApp, InjectBrowser, REDIRECT_URI } from '../../helpers/app.ts'

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
  'referrer-policy': 'no-referrer'
}

function securityHeaders (t: Test, response: LightMyRequestResponse): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) t.equal(response.headers[name], value, name)
}

/** Step 1: HTTP 400, an HTML page showing the code, and never a Location. */
function errorPage (t: Test, response: LightMyRequestResponse, errno: number): void {
  t.equal(response.statusCode, 400, 'status 400')
  t.equal(response.headers.location, undefined, 'no Location')
  t.match(response.headers['content-type'], /^text\/html/)
  t.equal(/<span id="error-code">(\d+)<\/span>/.exec(response.body)?.[1], String(errno), `page shows ${errno}`)
}

/** Step 2: a redirect to `redirectUri` carrying exactly error, error_description and maybe state. */
function errorRedirect (t: Test, response: LightMyRequestResponse, errno: number, { redirectUri = REDIRECT_URI, status = 302, state }: { redirectUri?: string, status?: number, state?: string } = {}): void {
  t.equal(response.statusCode, status, `status ${status}`)
  const location = String(response.headers.location)
  const prefix = /[?&]$/.test(redirectUri) ? redirectUri : redirectUri + (redirectUri.includes('?') ? '&' : '?')
  t.ok(location.startsWith(prefix + 'error='), `redirected to ${redirectUri}`)
  t.notOk(location.includes('#'), 'nothing in a fragment')
  const query = new URL(location).searchParams
  t.equal(query.get('error'), String(errno), `error=${errno}`)
  t.match(query.get('error_description'), /\S/, 'a description')
  t.equal(query.get('state'), state ?? null, state === undefined ? 'no state' : 'state echoed')
  const own = [...new URL(redirectUri).searchParams.keys()]
  t.same([...query.keys()], [...own, 'error', 'error_description', ...(state === undefined ? [] : ['state'])], 'no other parameters')
}

async function setup (t: Test, options: Parameters<typeof buildTestApp>[1] = {}) {
  const { app, store } = await buildTestApp(t, options)
  const { client, clientId } = await addClient(store, { scope: '1 3' })
  const get = async (params: Record<string, string>) => await app.inject({ url: authorizeUrl(params) })
  const base = { client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' }
  return { app, store, client, clientId, get, base }
}

t.test('step 1: a missing or malformed client_id is a 96002 page', async (t) => {
  const { app } = await setup(t)
  for (const clientId of [undefined, '', '0123', 'abc', '12345678901234567890', '9223372036854775808', '-1', '+1', '1e18', ' 1', '1.0']) {
    const params: Record<string, string> = { redirect_uri: REDIRECT_URI, response_type: 'code' }
    if (clientId !== undefined) params.client_id = clientId
    const response = await app.inject({ url: authorizeUrl(params) })
    errorPage(t, response, 96002)
  }
  // The same parameter given twice cannot name one client either.
  errorPage(t, await app.inject({ url: `/oauth2/authorize?client_id=1&client_id=1&redirect_uri=${encodeURIComponent(REDIRECT_URI)}` }), 96002)
})

t.test('step 1: an unknown client is a 96001 page, checked before the redirect_uri', async (t) => {
  const { get } = await setup(t)
  errorPage(t, await get({ client_id: '1', redirect_uri: REDIRECT_URI, response_type: 'code' }), 96001)
  errorPage(t, await get({ client_id: '9223372036854775807', redirect_uri: 'https://evil.example/', response_type: 'code' }), 96001)
  errorPage(t, await get({ client_id: 'abc', redirect_uri: 'https://evil.example/' }), 96002)
})

t.test('client ids above 2^53 keep every digit', async (t) => {
  const { store, clientId, get, base } = await setup(t)
  t.ok(BigInt(clientId) >= 10n ** 18n && BigInt(clientId) <= 2n ** 63n - 1n, 'registered id in [10^18, 2^63-1]')
  // A neighbour that a JS number cannot tell apart from the registered id.
  const neighbour = [1n, -1n, 2n, -2n].map((delta) => (BigInt(clientId) + delta).toString()).find((id) => Number(id) === Number(clientId))
  t.ok(neighbour !== undefined, 'a neighbour equal as a double exists')
  errorPage(t, await get({ ...base, client_id: neighbour! }), 96001)
  t.equal((await get({ ...base, response_type: 'xyz' })).statusCode, 302, 'the id itself is known')

  // The largest legal id, registered directly.
  const client = await store.getClient(clientId)
  await store.saveClient({ ...client!, id: '9223372036854775807' })
  errorRedirect(t, await get({ ...base, client_id: '9223372036854775807', response_type: 'xyz' }), 96011)
  errorPage(t, await get({ ...base, client_id: '9223372036854775806' }), 96001)
})

t.test('step 1: a missing or unmatched redirect_uri is a 96010 page, signed in or not', async (t) => {
  const { app, store, get, base } = await setup(t)
  const { redirect_uri: _unused, ...noRedirect } = base
  errorPage(t, await get(noRedirect), 96010)
  errorPage(t, await get({ ...base, redirect_uri: '' }), 96010)
  // Step 1 comes before step 2: a bad response_type does not earn a redirect.
  errorPage(t, await get({ ...noRedirect, response_type: 'xyz', redirect_uri: 'https://evil.example/callback' }), 96010)
  const response = await app.inject({ url: `${authorizeUrl(base)}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}` })
  errorPage(t, response, 96002)

  const user = await addUser(store)
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  errorPage(t, await browser.get(authorizeUrl({ ...base, redirect_uri: 'https://evil.example/callback' })), 96010)
})

t.test('pages and redirects of the endpoint carry the security headers', async (t) => {
  const { app, store, get, base } = await setup(t)
  securityHeaders(t, await get({ ...base, client_id: 'abc' }))
  securityHeaders(t, await get({ ...base, client_id: '1' }))
  securityHeaders(t, await get({ ...base, redirect_uri: 'https://evil.example/' }))
  securityHeaders(t, await get({ ...base, response_type: 'xyz' }))
  securityHeaders(t, await get(base))
  const user = await addUser(store)
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  const page = await browser.get(authorizeUrl(base))
  t.equal(page.statusCode, 200)
  securityHeaders(t, page)
  const allowed = await browser.post(authorizeUrl(base), { decision: 'allow' })
  t.equal(allowed.statusCode, 303)
  securityHeaders(t, allowed)
  t.equal(allowed.headers['access-control-allow-origin'], undefined, 'no CORS')
})

t.test('step 2: errors go back to the redirect_uri', async (t) => {
  const { app, store, get, base } = await setup(t)
  const { response_type: _unused, ...noType } = base
  errorRedirect(t, await get(noType), 96002)
  errorRedirect(t, await get({ ...base, response_type: '' }), 96002)
  errorRedirect(t, await get({ ...base, response_type: 'xyz', state: 's' }), 96011, { state: 's' })
  errorRedirect(t, await get({ ...base, response_type: 'CODE' }), 96011)
  errorRedirect(t, await get({ ...base, skip_confirm: 'maybe', state: 's' }), 96002, { state: 's' })
  errorRedirect(t, await get({ ...base, scope: '999', state: 's' }), 96007, { state: 's' })
  errorRedirect(t, await get({ ...base, scope: '1 999' }), 96007)
  errorRedirect(t, await get({ ...base, scope: '4' }), 96007, {}) // in the registry, not allowed to this client
  // An implicit request's errors are in the query too.
  errorRedirect(t, await get({ ...base, response_type: 'token', scope: '999' }), 96007)

  const codeOnly = await addClient(store, { responseTypes: ['code'] })
  errorRedirect(t, await get({ ...base, client_id: codeOnly.clientId, response_type: 'token', state: 's' }), 96005, { state: 's' })
  const tokenOnly = await addClient(store, { responseTypes: ['token'] })
  errorRedirect(t, await get({ ...base, client_id: tokenOnly.clientId }), 96005)

  // A parameter given twice: 96002; a repeated state is not echoed.
  const url = authorizeUrl({ ...base, state: 's' })
  errorRedirect(t, await app.inject({ url: `${url}&scope=1&scope=3` }), 96002, { state: 's' })
  errorRedirect(t, await app.inject({ url: `${url}&state=t` }), 96002)
  errorRedirect(t, await app.inject({ url: `${url}&skip_confirm=true&skip_confirm=true` }), 96002, { state: 's' })
})

t.test('state: echoed verbatim, 2048 characters at most', async (t) => {
  const { get, base } = await setup(t)
  const state = 'a b&c=d/é中🙂+%20?#'
  const response = await get({ ...base, response_type: 'xyz', state })
  errorRedirect(t, response, 96011, { state })
  t.ok(String(response.headers.location).endsWith(`&${new URLSearchParams({ state }).toString()}`), 'form-encoded')

  const accepted = await get({ ...base, state: 'x'.repeat(2048) })
  t.equal(accepted.statusCode, 302)
  t.match(accepted.headers.location, /^\/oauth2\/signin\?/, 'a 2048-character state goes on to sign-in')
  const refused = await get({ ...base, state: 'x'.repeat(2049) })
  t.equal(new URL(String(refused.headers.location)).searchParams.get('error'), '96002', 'a 2049-character state is a 96002')
})

t.test('the user part: deny is 96012 with 303; form POST errors are 303', async (t) => {
  const { app, store, base } = await setup(t)
  const user = await addUser(store)
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  const url = authorizeUrl({ ...base, state: 'st 1' })
  const denied = await browser.decide(url, 'deny')
  errorRedirect(t, denied, 96012, { status: 303, state: 'st 1' })
  securityHeaders(t, denied)
  t.same(await store.getConsent(user.userId, base.client_id), [], 'nothing granted')

  errorRedirect(t, await browser.post(url, { decision: 'maybe' }), 96002, { status: 303, state: 'st 1' })
  errorRedirect(t, await browser.post(authorizeUrl({ ...base, scope: '999' }), { decision: 'allow' }), 96007, { status: 303 })
  errorPage(t, await browser.post(authorizeUrl({ ...base, redirect_uri: 'https://evil.example/' }), { decision: 'allow' }), 96010)
})

// A match is seen as a 96011 redirect to the request's own URI; a mismatch as the 96010 page.
const MATCHING = [
  REDIRECT_URI,
  'https://app.example.com/callback?x=1',
  'https://app.example.com/callback?',
  'HTTPS://APP.EXAMPLE.COM/callback',
  'https://App.Example.Com/callback?Y=Z',
  'https://app.example.com:443/callback'
]
const NOT_MATCHING = [
  'https://app.example.com/Callback',
  'https://app.example.com/callback/',
  'https://app.example.com/callback/../callback',
  'https://app.example.com/%63allback',
  'https://app.example.com/callback#x',
  'https://app.example.com/callback?x=1#',
  'http://app.example.com/callback',
  'https://app.example.com:8443/callback',
  'https://other.example.com/callback',
  'https://evil.example/callback',
  'https://app.example.com.evil.example/callback',
  'https://app.example.com@evil.example/callback',
  '//evil.example',
  '//app.example.com/callback',
  '/callback',
  'javascript:alert(1)',
  'javascript://app.example.com/callback',
  'https:app.example.com/callback',
  ' https://app.example.com/callback'
]

t.test('redirect_uri matching (section 2)', async (t) => {
  const { get, base } = await setup(t)
  for (const uri of MATCHING) errorRedirect(t, await get({ ...base, redirect_uri: uri, response_type: 'xyz' }), 96011, { redirectUri: uri })
  for (const uri of NOT_MATCHING) {
    const response = await get({ ...base, redirect_uri: uri, response_type: 'xyz' })
    t.equal(response.headers.location, undefined, `${uri}: no Location`)
    t.equal(response.statusCode, 400, `${uri}: 400 page`)
  }
  // A backslash is a path separator to URL parsers and browsers: this is
  // https://app.example.com/evil/callback, though its raw text ends in /callback.
  const confusing = await get({ ...base, redirect_uri: 'https://app.example.com\\evil/callback', response_type: 'xyz' })
  t.equal(confusing.headers.location, undefined, 'a backslash path does not match /callback')
})

t.test('strictRedirectUri demands the whole string', async (t) => {
  const { get, base } = await setup(t, { strictRedirectUri: true })
  errorRedirect(t, await get({ ...base, response_type: 'xyz' }), 96011)
  for (const uri of MATCHING.slice(1)) errorPage(t, await get({ ...base, redirect_uri: uri, response_type: 'xyz' }), 96010)
})
