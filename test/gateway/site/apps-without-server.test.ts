// Apps without a server in real Chromium: the demo app (gateway/site/demo/app-server.ts) on an origin
// of its own signs in through both grants with macgate/client's browser entry and calls the open
// API; it refreshes, revokes and reads every refusal's code. Pages on an origin no client registered,
// or holding another client's token, cannot read the open API's answers. The shared request vectors
// run in the page as in Node (client-web.test.ts).
import { createServer } from 'node:http'
import type { BrowserContext, Page, Request } from 'playwright-core'
import t, { type Test } from 'tap'
import { startDemoApp, type DemoApp } from '../../../gateway/site/demo/app-server.ts'
import { registerClient } from '../../../plugin/operator/clients.ts'
import { signRequest } from '../../../plugin/client/index.ts'
import { ScopeRegistry } from '../../../plugin/access/scope.ts'
import { addClient, addUser, buildTestApp, InjectBrowser } from '../../helpers/app.ts'
import { launch, skipWithoutChromium } from '../../helpers/browser.ts'
import { grantTokens } from '../../helpers/grants.ts'
import { REQUEST_VECTORS as VECTORS } from '../../helpers/client-vectors.ts'
import { listenOnLoopback } from '../../helpers/listen.ts'

/** The gateway, the demo app at its own origin with its two public clients, and a user. */
async function startApps (t: Test) {
  const { app, store } = await buildTestApp(t)
  const gateway = await app.listen({ port: 0, host: '127.0.0.1' })
  const demoApp: DemoApp = await startDemoApp('127.0.0.1')
  t.teardown(demoApp.close)
  const registry = new ScopeRegistry()
  const appClient = { redirectUris: [`${demoApp.origin}/`], scope: '1 3 4 6', public: true as const }
  const code = await registerClient(store, registry, { ...appClient, name: 'Code App' })
  const implicit = await registerClient(store, registry, { ...appClient, name: 'Implicit App', responseTypes: ['token'] })
  demoApp.configure({ gateway, redirectUri: `${demoApp.origin}/`, scope: '1 3', clients: { code: code.client.id, token: implicit.client.id } })
  const user = await addUser(store, 'alice', 'correct horse battery')
  return { app, store, gateway, demoApp, user, clients: { code: code.client.id, token: implicit.client.id } }
}

/** A page on an origin of its own that serves nothing but an empty page. */
async function startBlankOrigin (t: Test): Promise<string> {
  const server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>blank</title>'))
  return await listenOnLoopback(t, server)
}

async function newTab (context: BrowserContext): Promise<Page> {
  const tab = await context.newPage()
  tab.setDefaultTimeout(15_000)
  return tab
}

/** The demo app's answers, newest first: title, status and code of each. */
async function answers (tab: Page): Promise<Array<{ title: string, status: string, code: string }>> {
  return await tab.locator('#results .call').evaluateAll((entries) => entries.map((entry) => ({
    title: entry.querySelector('h3')?.textContent ?? '', status: (entry as HTMLElement).dataset.status ?? '', code: (entry as HTMLElement).dataset.code ?? ''
  })))
}

async function waitForAnswers (tab: Page, count: number): Promise<Array<{ title: string, status: string, code: string }>> {
  await tab.waitForFunction((count) => document.querySelectorAll('#results .call').length >= count, count)
  return await answers(tab)
}

/** Sign in on the gateway's page (when asked) and allow. */
async function signInAndAllow (tab: Page, user: { username: string, password: string }, appOrigin: string): Promise<void> {
  await tab.waitForURL(/\/oauth2\/(signin|authorize)/)
  if (new URL(tab.url()).pathname === '/oauth2/signin') {
    await tab.fill('input[name=username]', user.username)
    await tab.fill('input[name=password]', user.password)
    await Promise.all([tab.waitForURL(/\/oauth2\/authorize\?/), tab.click('button[type=submit]')])
  }
  await Promise.all([tab.waitForURL(`${appOrigin}/**`), tab.click('button[value=allow]')])
  await tab.waitForSelector('body[data-ready=true]')
}

t.test('the browser entry signs the shared vectors as Node does', { skip: skipWithoutChromium }, async (t) => {
  const { demoApp } = await startApps(t)
  const browser = await launch(t)
  const tab = await newTab(await browser.newContext())
  await tab.goto(`${demoApp.origin}/`)
  const headers = await tab.evaluate(async (vectors) => {
    const client = await import('/lib/client/browser.js' as string) as typeof import('../../../plugin/client/browser.ts')
    return await Promise.all(vectors.map(async (vector) => await client.signRequestAsync({
      method: vector.method, url: vector.url, accessToken: vector.access_token, macKey: vector.mac_key, nonce: vector.nonce, ...(vector.mac_algorithm !== undefined && { macAlgorithm: vector.mac_algorithm })
    })))
  }, VECTORS)
  t.same(headers, VECTORS.map((vector) => vector.header), 'every header identical to the vectors (and to the Node signer\'s)')
})

t.test('the code grant with PKCE: sign in, call, replay, refresh, revoke', { skip: skipWithoutChromium }, async (t) => {
  const { gateway, demoApp, user, clients } = await startApps(t)
  const browser = await launch(t)
  const context = await browser.newContext()
  const requests: Request[] = []
  context.on('request', (request) => requests.push(request))
  const tab = await newTab(context)
  await tab.goto(`${demoApp.origin}/`)
  await tab.waitForSelector('body[data-ready=true]')
  await tab.click('#signin')
  await signInAndAllow(tab, user, demoApp.origin)

  let seen = await waitForAnswers(tab, 2)
  t.same(seen.map(({ title, status, code }) => [title, status, code]), [['GET /user/phoneAndEmail → 403', '403', '96012'], ['GET /user/profile → 200', '200', '0']],
    'both signed calls answered: the profile, and a refusal (scopes 4 and 6 were not asked for) the page reads')
  t.match(await tab.locator('#results .call pre').last().textContent(), /"miliaoNick"/, 'the profile, read by the page')
  t.equal(tab.url(), `${demoApp.origin}/`, 'the code and state left the address bar')
  t.equal(await tab.textContent('#grant-used'), 'code grant with PKCE (public client)')
  t.match(await tab.textContent('#open-id'), /^[A-Za-z0-9_-]{43}$/)
  t.same(await tab.evaluate(() => Object.keys(sessionStorage).filter((key) => key !== 'macgate.demo.grant')), [], 'the PKCE verifier is gone from sessionStorage')

  const exchange = requests.find((request) => request.url() === `${gateway}/oauth2/token`)
  const form = new URLSearchParams(exchange?.postData() ?? '')
  t.same([form.get('grant_type'), form.get('client_id'), form.has('code_verifier'), form.has('client_secret')], ['authorization_code', clients.code, true, false], 'the code redeemed with client_id and the verifier')
  t.same(requests.filter((request) => /client_secret/.test(request.url() + (request.postData() ?? ''))).map((request) => request.url()), [], 'no request from the page carries a secret')
  const authorize = requests.find((request) => request.url().startsWith(`${gateway}/oauth2/authorize?`))
  t.equal(new URL(authorize!.url()).searchParams.get('code_challenge_method'), 'S256')

  await tab.click('#replay')
  seen = await waitForAnswers(tab, 4)
  t.same(seen.slice(0, 2).map(({ status, code }) => [status, code]), [['401', '96012'], ['200', '0']], 'one signed request twice: the second is refused and the page reads why')

  await tab.click('#refresh')
  seen = await waitForAnswers(tab, 6)
  t.same(seen.slice(0, 2).map(({ title, status }) => [title, status]), [['GET /user/profile → 200', '200'], ['refreshed: a new access token and refresh token → ok', 'ok']], 'refreshed by the public client, and the new token works')

  await tab.click('#revoke')
  seen = await waitForAnswers(tab, 8)
  t.same(seen.slice(0, 2).map(({ status, code }) => [status, code]), [['401', '96008'], ['ok', '']], 'revoked by the public client: the token is refused, and the page reads 96008')
  await tab.click('#refresh')
  seen = await waitForAnswers(tab, 9)
  t.same([seen[0]?.status, seen[0]?.code], ['failed', '96009'], 'the revoked grant\'s refresh token is refused too, with its code')
})

t.test('the implicit grant: the token from the fragment, no exchange', { skip: skipWithoutChromium }, async (t) => {
  const { gateway, demoApp, user } = await startApps(t)
  const browser = await launch(t)
  const context = await browser.newContext()
  const requests: string[] = []
  context.on('request', (request) => requests.push(`${request.method()} ${request.url()}`))
  const tab = await newTab(context)
  await tab.goto(`${demoApp.origin}/`)
  await tab.waitForSelector('body[data-ready=true]')
  await tab.check('input[value=token]')
  await tab.click('#signin')
  await signInAndAllow(tab, user, demoApp.origin)
  const seen = await waitForAnswers(tab, 2)
  t.same(seen.map(({ status }) => status), ['403', '200'], 'both signed calls answered (the second one\'s scopes were not asked for)')
  t.equal(tab.url(), `${demoApp.origin}/`, 'the tokens left the address bar')
  t.equal(await tab.textContent('#grant-used'), 'implicit grant')
  t.ok(await tab.isDisabled('#refresh'), 'no refresh token to refresh with')
  t.same(requests.filter((request) => request.includes('/oauth2/token')), [], 'nothing sent to the token endpoint')
  t.ok(requests.some((request) => request.startsWith(`GET ${gateway}/oauth2/authorize?`) && request.includes('response_type=token')))
})

t.test('pages that must not read the open API\'s answers', { skip: skipWithoutChromium }, async (t) => {
  const { app, gateway, demoApp, store, user } = await startApps(t)
  // A confidential client registered elsewhere (https://app.example.com): its token, signed in Node.
  const other = await addClient(store, { name: 'Elsewhere' })
  const injectBrowser = new InjectBrowser(app)
  await injectBrowser.signIn(user.username, user.password)
  const tokens = await grantTokens(t, app, injectBrowser, other)
  const sign = () => signRequest({ method: 'GET', url: `${gateway}/user/profile`, accessToken: tokens.access_token, macKey: tokens.mac_key })
  const browser = await launch(t)
  const context = await browser.newContext()
  const readFrom = async (origin: string, authorization: string) => {
    const tab = await newTab(context)
    await tab.goto(`${origin}/`)
    return await tab.evaluate(async ({ url, authorization }) => {
      try {
        const answer = await fetch(url, { headers: { authorization } })
        return { status: answer.status, body: await answer.text(), challenge: answer.headers.get('www-authenticate') }
      } catch (error) {
        return { blocked: (error as Error).name }
      }
    }, { url: `${gateway}/user/profile`, authorization })
  }

  // An origin no client registered: the preflight is refused, so the request is never sent.
  const stranger = await startBlankOrigin(t)
  const unsent = sign()
  t.same(await readFrom(stranger, unsent), { blocked: 'TypeError' }, 'a page on an unregistered origin cannot read the answer')
  const preflight = await fetch(`${gateway}/user/profile`, { method: 'OPTIONS', headers: { origin: stranger, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } })
  t.equal(preflight.headers.get('access-control-allow-origin'), null, 'its preflight carries no Access-Control-Allow-Origin')
  const direct = await fetch(`${gateway}/user/profile`, { headers: { authorization: unsent } })
  t.equal(direct.status, 200, 'the blocked request was never sent: its nonce is still unspent')

  // The demo app's origin (its clients') with another client's token: verified, but not readable there.
  t.same(await readFrom(demoApp.origin, sign()), { blocked: 'TypeError' }, 'a page on client A\'s origin cannot read an answer for client B\'s token')
  const answered = await fetch(`${gateway}/user/profile`, { headers: { authorization: sign(), origin: demoApp.origin } })
  t.equal(answered.status, 200, 'the gateway did answer it')
  t.equal(answered.headers.get('access-control-allow-origin'), null, 'without letting that origin read it')
  // A refusal is readable from any allowed origin, so that an app can tell why.
  const refused = await readFrom(demoApp.origin, sign().replace(/mac="[^"]+"/, 'mac="AAAA"'))
  t.match(refused, { status: 401, body: /"code":96012/, challenge: /^MAC/ }, 'a refusal is readable there, with its code and its WWW-Authenticate')
})
