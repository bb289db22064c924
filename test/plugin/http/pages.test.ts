// The pages a person sees, at the inject level: the landing page and icon (and a configured route
// winning over them), the sign-in page naming the app, and a reload of the demo's last page.
import type { LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { buildGateway } from '../../../gateway/index.ts'
import { FAVICON_SVG, MemoryStore } from '../../../plugin/index.ts'
import { addClient, addUser, authorizeAndAllow, authorizeUrl, buildTestApp, InjectBrowser, REDIRECT_URI, signedInBrowser } from '../../helpers/app.ts'

const PAGE_HEADERS = { 'cache-control': 'no-store', 'x-frame-options': 'DENY', 'content-security-policy': "frame-ancestors 'none'", 'referrer-policy': 'no-referrer' }

function assertPage (t: Test, response: LightMyRequestResponse, status = 200): void {
  t.equal(response.statusCode, status)
  t.equal(response.headers['content-type'], 'text/html; charset=utf-8')
  for (const [name, value] of Object.entries(PAGE_HEADERS)) t.equal(response.headers[name], value, name)
  t.match(response.body, '<meta name="viewport" content="width=device-width,initial-scale=1">', 'readable on a phone')
  t.match(response.body, '<link rel="icon" type="image/svg+xml" href="data:image/svg+xml,', 'an icon without a request')
}

/** `name=value` pairs of a response's Set-Cookie headers, as a browser would send them back. */
function cookiesOf (response: LightMyRequestResponse): Record<string, string> {
  const header = response.headers['set-cookie']
  const lines = Array.isArray(header) ? header : header === undefined ? [] : [header]
  return Object.fromEntries(lines.map((line) => line.split(';')[0]!.split('=') as [string, string]))
}

const cookieHeader = (cookies: Record<string, string>): string => Object.entries(cookies).filter(([, value]) => value !== '').map(([name, value]) => `${name}=${value}`).join('; ')

t.test('the landing page at /', async (t) => {
  const { app } = await buildTestApp(t)
  const page = await app.inject('/')
  assertPage(t, page)
  t.match(page.body, '<h1>macgate</h1>')
  t.match(page.body, '<a href="/.well-known/oauth-authorization-server">', 'links to the server metadata')
  t.notMatch(page.body, 'href="/demo"', 'no demo link without a demo client')
  // Account pages are linked as the plugin registers them; every link is a page that exists.
  const links = [...page.body.matchAll(/<a href="([^"]+)"/g)].map(([, href]) => href!)
  for (const href of links) t.ok(app.hasRoute({ method: 'GET', url: href }), `${href} is a page`)
  t.equal(page.body.includes('id="account-links"'), app.hasRoute({ method: 'GET', url: '/account/apps' }), 'an account section when there are account pages')
  const head = await app.inject({ method: 'HEAD', url: '/' })
  t.equal(head.statusCode, 200)
  t.equal(head.headers['x-frame-options'], 'DENY', 'HEAD gets the page headers too')
  t.equal((await app.inject('/?utm_source=x')).statusCode, 200, 'a query changes nothing')

  const post = await app.inject({ method: 'POST', url: '/' })
  t.equal(post.statusCode, 404, 'other methods: the open API answer, as before')
  t.match(JSON.parse(post.body), { result: 'error', code: 404 })
})

t.test('with the demo on, the landing page links to it', async (t) => {
  const store = new MemoryStore()
  const app = await buildGateway({ store, demo: { clientId: 'x', clientSecret: 'y', redirectUri: 'http://127.0.0.1/demo/callback' } })
  t.teardown(async () => await app.close())
  t.match((await app.inject('/')).body, '<a class="button" id="demo" href="/demo">Try the demo</a>')
})

t.test('the icon', async (t) => {
  const { app } = await buildTestApp(t)
  for (const url of ['/favicon.svg', '/favicon.ico']) {
    const icon = await app.inject(url)
    t.equal(icon.statusCode, 200, url)
    t.equal(icon.headers['content-type'], 'image/svg+xml')
    t.equal(icon.headers['cache-control'], 'public, max-age=86400', 'cacheable, unlike the pages')
    t.equal(icon.body, FAVICON_SVG)
  }
})

t.test('a configured route covering / or the icon wins: the path is proxied, MAC check first', async (t) => {
  const wildcard = await buildTestApp(t, { routes: [{ path: '/*', methods: ['GET', 'POST'], scopes: [], match: 'all' }] })
  for (const url of ['/', '/favicon.ico', '/favicon.svg']) {
    const answer = await wildcard.app.inject(url)
    t.equal(answer.statusCode, 401, `${url} is the user's route`)
    t.equal(answer.headers['www-authenticate'], 'MAC')
  }
  const exact = await buildTestApp(t, { routes: [{ path: '/', methods: ['GET'], scopes: [], match: 'all' }] })
  t.equal((await exact.app.inject('/')).statusCode, 401, 'an exact / route is the user\'s too')
  t.equal((await exact.app.inject('/favicon.ico')).statusCode, 200, 'and the icon, uncovered, still ours')
  const other = await buildTestApp(t, { routes: [{ path: '/api/*', methods: ['GET'], scopes: [], match: 'all' }] })
  t.equal((await other.app.inject('/')).statusCode, 200, 'a prefix route elsewhere leaves / to the landing page')
})

t.test('the sign-in page names the registered app it continues to, escaped', async (t) => {
  const { app, store } = await buildTestApp(t)
  const { clientId } = await addClient(store, { name: 'Photo <Printer> & "Co"' })
  const signIn = async (returnTo: string): Promise<LightMyRequestResponse> => await app.inject(`/oauth2/signin?${new URLSearchParams({ return_to: returnTo }).toString()}`)
  const page = await signIn(authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' }))
  assertPage(t, page)
  t.match(page.body, '<h1>Sign in to continue to <span id="app-name">Photo &lt;Printer&gt; &amp; &quot;Co&quot;</span></h1>')
  t.match(page.body, '<div class="actions"><button type="submit">Sign in</button></div>', 'the primary button')

  for (const [returnTo, why] of [
    ['', 'no return_to'],
    [authorizeUrl({ client_id: '999999999', redirect_uri: REDIRECT_URI }), 'an unknown client'],
    ['/oauth2/authorize?client_id=%FF', 'a malformed query'],
    [`/oauth2/authorize?client_id=${clientId}&client_id=${clientId}`, 'a repeated client_id'],
    ['/oauth2/authorize?client_id=../x', 'a malformed client_id']
  ] as const) {
    const plain = await signIn(returnTo)
    t.equal(plain.statusCode, 200, why)
    t.match(plain.body, '<h1>Sign in</h1>', `${why}: no app named`)
  }

  // A failed sign-in shows the form again, still naming the app.
  const browser = new InjectBrowser(app)
  const user = await addUser(store)
  const failed = await browser.signIn(user.username, 'wrong password!', authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' }))
  t.equal(failed.statusCode, 401)
  t.match(failed.body, 'id="app-name">Photo &lt;Printer&gt;')
})

t.test('the consent page: Allow is the primary action, Deny the secondary', async (t) => {
  const { app, store } = await buildTestApp(t)
  const { clientId } = await addClient(store)
  const browser = await signedInBrowser(app, await addUser(store))
  const page = await browser.get(authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' }))
  assertPage(t, page)
  t.match(page.body, /<div class="actions">\s*<button type="submit" name="decision" value="allow">Allow<\/button><button type="submit" name="decision" value="deny" class="secondary">Deny<\/button><\/div>/)
})

t.test('a reload of the demo\'s last page says the sign-in is done, not a state mismatch', async (t) => {
  const store = new MemoryStore()
  const redirectUri = 'http://127.0.0.1/demo/callback'
  const { clientId, clientSecret } = await addClient(store, { name: 'macgate demo', redirectUris: [redirectUri] })
  const app = await buildGateway({ store, demo: { clientId, clientSecret, redirectUri } })
  t.teardown(async () => await app.close())

  const start = await app.inject('/demo/start')
  t.equal(start.statusCode, 302)
  const state = new URL(start.headers.location as string, 'http://127.0.0.1').searchParams.get('state')!
  const cookies = cookiesOf(start)
  t.equal(cookies.macgate_demo_state, state)

  const user = await addUser(store)
  const callback = await authorizeAndAllow(new InjectBrowser(app), user, { client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: '1 3 4 6', state })
  const url = `${callback.pathname}${callback.search}`
  const first = await app.inject({ url, headers: { host: '127.0.0.1', cookie: cookieHeader(cookies) } })
  assertPage(t, first)
  t.match(first.body, '<h1>Signed in through macgate</h1>')
  Object.assign(cookies, cookiesOf(first))
  t.equal(cookies.macgate_demo_state, '', 'the state is spent')
  t.equal(cookies.macgate_demo_done, state, 'and remembered as done')

  const reload = await app.inject({ url, headers: { host: '127.0.0.1', cookie: cookieHeader(cookies) } })
  assertPage(t, reload)
  t.match(reload.body, '<h1>This sign-in was already completed</h1>')
  t.match(reload.body, 'href="/demo/start">Sign in again</a>', 'with a way to start again')
  t.notMatch(reload.body, /state/i, 'no word of a state mismatch')

  // A callback this browser never started is still refused as one.
  const foreign = await app.inject({ url: '/demo/callback?code=x&state=other', headers: { cookie: cookieHeader(cookies) } })
  assertPage(t, foreign, 400)
  t.match(foreign.body, 'The state does not match')
  const bare = await app.inject({ url })
  t.equal(bare.statusCode, 400, 'no cookie at all: a mismatch')
})
