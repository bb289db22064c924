// The authorization code grant in a real browser, with a small client app of its own that
// exchanges the code server-side. The sign-in and consent pages are checked and photographed at a
// desktop and a phone width, into the test's fixture dir (TAP_SAVE_FIXTURE=1 keeps them).
import { existsSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { BrowserContext, Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { addClient, addUser, buildTestApp } from '../../helpers/app.ts'
import { backgrounds, checkLayout, launch, signIn, skipWithoutChromium } from '../../helpers/browser.ts'
import { listenOnLoopback } from '../../helpers/listen.ts'

const PREFIX = '&&&START&&&'

const escape = (text: string) => text.replace(/[&<>"]/g, (character) => `&#${character.charCodeAt(0)};`)
const page = (title: string, body: string) => `<!doctype html><meta charset="utf-8"><title>${escape(title)}</title>${body}`

/**
 * The client app: /callback checks the state it handed out, exchanges the code at the gateway's
 * token endpoint with its secret, and shows what it got.
 */
async function startClientApp (t: Test, gateway: () => { origin: string, clientId: string, clientSecret: string }) {
  const states = new Set<string>()
  const exchanges: Array<Record<string, unknown>> = []
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', `http://${request.headers.host}`)
    const send = (status: number, html: string) => response.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(html)
    if (url.pathname !== '/callback') return send(404, page('Not found', '<h1>Not found</h1>'))
    const state = url.searchParams.get('state') ?? ''
    if (!states.delete(state)) return send(400, page('Bad state', '<h1 id="result">state mismatch</h1>'))
    const error = url.searchParams.get('error')
    if (error !== null) return send(200, page('Denied', `<h1 id="result">authorization failed</h1><p id="error">${escape(error)}</p>`))
    const { origin, clientId, clientSecret } = gateway()
    const query = new URLSearchParams({
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uri: `${url.origin}/callback`,
      grant_type: 'authorization_code',
      code: url.searchParams.get('code') ?? ''
    })
    fetch(`${origin}/oauth2/token?${query}`).then(async (answer) => {
      const raw = await answer.text()
      const body = JSON.parse(raw.startsWith(PREFIX) ? raw.slice(PREFIX.length) : raw) as Record<string, unknown>
      exchanges.push({ status: answer.status, prefixed: raw.startsWith(PREFIX), ...body })
      if (answer.status !== 200) return send(502, page('Exchange failed', `<h1 id="result">exchange failed</h1><p id="error">${escape(String(body.error))}</p>`))
      send(200, page('Signed in', `<h1 id="result">exchange succeeded</h1>
<dl><dt>openId</dt><dd id="openid">${escape(String(body.openId))}</dd><dt>scope</dt><dd id="scope">${escape(String(body.scope))}</dd></dl>`))
    }).catch((failure: Error) => send(500, page('Error', `<h1 id="result">${escape(failure.message)}</h1>`)))
  })
  return { origin: await listenOnLoopback(t, server), states, exchanges }
}

/** A tab whose console errors (a failed favicon load among them) land in `errors`. */
async function newPage (context: BrowserContext, errors: string[] = []): Promise<Page> {
  const tab = await context.newPage()
  tab.setDefaultTimeout(10_000)
  tab.on('console', (message) => { if (message.type() === 'error') errors.push(`${tab.url()}: ${message.text()}`) })
  return tab
}

t.test('the code grant in Chromium', { skip: skipWithoutChromium }, async (t) => {
  const { app, store } = await buildTestApp(t)
  const gatewayOrigin = await app.listen({ port: 0, host: '127.0.0.1' })
  let registered = { clientId: '', clientSecret: '' }
  const clientApp = await startClientApp(t, () => ({ origin: gatewayOrigin, ...registered }))
  const redirectUri = `${clientApp.origin}/callback`
  registered = await addClient(store, { name: 'Photo Printer', redirectUris: [redirectUri], scope: '1 3' })
  const user = await addUser(store, 'alice', 'correct horse battery')
  const authorizeUrl = (state: string, extra: Record<string, string> = {}) => `${gatewayOrigin}/oauth2/authorize?${new URLSearchParams({
    client_id: registered.clientId, response_type: 'code', redirect_uri: redirectUri, scope: '1 3', state, ...extra
  })}`
  const browser = await launch(t)
  const shots = t.testdir()
  const consoleErrors: string[] = []

  // First authorization: sign in, confirm, allow.
  const context = await browser.newContext()
  const tab = await newPage(context, consoleErrors)
  clientApp.states.add('first-state')
  await tab.goto(authorizeUrl('first-state'))
  t.equal(new URL(tab.url()).pathname, '/oauth2/signin', 'not signed in: the sign-in page')
  t.equal(await tab.textContent('#app-name'), 'Photo Printer', 'the sign-in page names the app asking')
  t.equal(await tab.textContent('h1'), 'Sign in to continue to Photo Printer')
  const signInShots = await checkLayout(t, tab, { name: 'signin', dir: shots, primary: 'button[type=submit]' })
  await signIn(tab, user.username, user.password, /\/oauth2\/authorize\?/)
  t.equal(await tab.textContent('#account'), 'alice', 'the confirmation page names the account')
  t.equal(await tab.textContent('h1'), 'Authorize Photo Printer', 'and the app')
  t.same(await tab.locator('#permissions li').allTextContents(), ['Profile', 'Open ID'], 'and the permissions asked for')
  t.equal(await tab.locator('button[value=allow]').count(), 1)
  t.equal(await tab.locator('button[value=deny]').count(), 1)
  const [allow, deny] = await backgrounds(tab, 'button[value=allow]', 'button[value=deny]')
  t.not(allow, deny, `Allow (${allow}) and Deny (${deny}) look different`)
  const consentShots = await checkLayout(t, tab, { name: 'consent', dir: shots, primary: 'button[value=allow]' })
  for (const shot of [...signInShots, ...consentShots]) t.ok(existsSync(shot), `screenshot ${shot}`)
  const icon = await tab.request.get(`${gatewayOrigin}/favicon.ico`)
  t.equal(icon.status(), 200, 'an icon at /favicon.ico')
  t.equal(icon.headers()['content-type'], 'image/svg+xml')
  await Promise.all([tab.waitForURL(`${redirectUri}?**`), tab.click('button[value=allow]')])
  const landed = new URL(tab.url())
  t.equal(landed.searchParams.get('state'), 'first-state')
  t.match(landed.searchParams.get('code'), /^[A-Za-z0-9_.-]{22,}$/)
  t.equal(await tab.textContent('#result'), 'exchange succeeded')
  t.equal(await tab.textContent('#scope'), '1 3')
  const openId = await tab.textContent('#openid')
  t.match(openId, /^[A-Za-z0-9_-]{43}$/, 'an openId')
  t.same(Object.keys(clientApp.exchanges[0] ?? {}), ['status', 'prefixed', 'access_token', 'expires_in', 'refresh_token', 'scope', 'token_type', 'mac_key', 'mac_algorithm', 'openId'])
  t.match(clientApp.exchanges[0], { status: 200, prefixed: true, token_type: 'mac', mac_algorithm: 'HmacSha1', expires_in: 7_776_000 })

  // Second authorization: consent given already, skip_confirm=true goes straight back.
  clientApp.states.add('second-state')
  const statuses: number[] = []
  tab.on('response', (response) => { if (response.url().startsWith(`${gatewayOrigin}/oauth2/`)) statuses.push(response.status()) })
  await tab.goto(authorizeUrl('second-state', { skip_confirm: 'true' }))
  t.equal(tab.url().split('?')[0], redirectUri, 'back at the callback')
  t.same(statuses, [302], 'one redirect, no page in between')
  t.equal(new URL(tab.url()).searchParams.get('state'), 'second-state')
  t.equal(await tab.textContent('#result'), 'exchange succeeded')
  t.equal(await tab.textContent('#openid'), openId, 'the same openId for the same user and client')
  t.equal(clientApp.exchanges.length, 2)
  await context.close()

  // A fresh browser profile: sign in again, then deny.
  const denying = await browser.newContext()
  const other = await newPage(denying)
  clientApp.states.add('third-state')
  await other.goto(authorizeUrl('third-state'))
  await signIn(other, user.username, user.password, /\/oauth2\/authorize\?/)
  t.equal(await other.textContent('#account'), 'alice', 'without skip_confirm the confirmation page is shown again')
  await Promise.all([other.waitForURL(`${redirectUri}?**`), other.click('button[value=deny]')])
  const denied = new URL(other.url())
  t.equal(denied.searchParams.get('error'), '96012')
  t.equal(denied.searchParams.get('state'), 'third-state')
  t.equal(denied.searchParams.get('code'), null)
  t.equal(await other.textContent('#result'), 'authorization failed')
  t.equal(await other.textContent('#error'), '96012')
  t.equal(clientApp.exchanges.length, 2, 'no exchange after a denial')
  t.same([...clientApp.states], [], 'every state came back once')
  await denying.close()
  // The client app's own pages (which serve no icon) are not ours to judge.
  t.same(consoleErrors.filter((line) => line.startsWith(gatewayOrigin)), [], 'no error in the browser console on the gateway\'s pages (no missing favicon)')
})
