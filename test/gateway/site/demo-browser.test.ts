// The /demo page in real Chromium against `macgate start` on the embedded store: from the landing
// page, sign in as the demo user, allow, and see the exchanged token and two signed open API calls
// on /demo/callback; a reload of it says the sign-in is done; then the demo app on its own origin
// signs in and calls the open API from the page. The landing page and the demo's last pages are
// checked and photographed at a desktop and a phone width, into the test's fixture dir.
import { existsSync } from 'node:fs'
import t from 'tap'
import { startDemoServer } from '../../helpers/demo-server.ts'
import { checkLayout, launch, skipWithoutChromium } from '../../helpers/browser.ts'

t.test('the demo client signs in and calls the open API in Chromium', { skip: skipWithoutChromium }, async (t) => {
  // The banner comes once the server listens; it names the demo user's one-time password.
  const demo = await startDemoServer(t, /demo user +username=demo +password=(\S+)/)
  const { origin, output, exited } = demo
  const password = demo.banner?.[1]
  t.ok(password, 'the banner names the demo password')
  if (password === undefined) {
    t.comment(`server output: ${output.stdout}${output.stderr}`)
    return
  }
  t.match(output.stdout, `demo page    ${origin}/demo`)
  t.match(output.stdout, `redirect_uri=${origin}/demo/callback`)

  const browser = await launch(t)
  const shots = t.testdir()
  const page = await browser.newPage()
  page.setDefaultTimeout(15_000)
  const consoleErrors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(`${page.url()}: ${message.text()}`) })

  const landing = await page.goto(`${origin}/`)
  t.equal(landing?.status(), 200, 'a landing page at /')
  t.equal(await page.title(), 'macgate')
  t.equal(await page.getAttribute('a#demo', 'href'), '/demo', 'it links to the demo')
  t.equal(await page.getAttribute('#standard-links a', 'href'), '/.well-known/oauth-authorization-server', 'and to the server metadata')
  const landingShots = await checkLayout(t, page, { name: 'landing', dir: shots, primary: 'a#demo' })

  const statuses: Array<[string, number]> = []
  page.on('response', (response) => { statuses.push([new URL(response.url()).pathname, response.status()]) })
  await Promise.all([page.waitForURL((url) => url.pathname === '/demo'), page.click('a#demo')])
  t.equal(await page.title(), 'macgate demo')
  t.equal(await page.textContent('#start'), 'Sign in with macgate')

  await page.click('#start')
  await page.waitForURL((url) => url.pathname === '/oauth2/signin')
  t.equal(await page.title(), 'Sign in')
  t.equal(await page.textContent('#app-name'), 'macgate demo', 'the sign-in page names the demo client')
  await page.fill('input[name=username]', 'demo')
  await page.fill('input[name=password]', password)
  await page.click('button[type=submit]')

  await page.waitForURL((url) => url.pathname === '/oauth2/authorize')
  t.equal(await page.title(), 'Authorize')
  t.equal(await page.textContent('#account'), 'demo')
  t.equal(await page.locator('#permissions li').count(), 4, 'four permissions asked: 1 3 4 6')
  await page.click('button[name=decision][value=allow]')

  await page.waitForURL((url) => url.pathname === '/demo/callback')
  t.equal(await page.title(), 'macgate demo: signed in')
  t.equal(await page.textContent('#scope'), '1 3 4 6')
  const openId = await page.textContent('#open-id')
  t.match(openId, /^[A-Za-z0-9_-]{43}$/, 'a non-empty openId')
  t.match(await page.textContent('#token-body'), /^&&&START&&&\{"access_token":"[A-Za-z0-9_-]{6}…","expires_in":7776000,/)

  const results = await page.locator('.api-result').allTextContents()
  t.equal(results.length, 2, 'two open API calls shown')
  const [profile, contact] = results.map((text) => JSON.parse(text) as { result: string, code: number, data: Record<string, string> })
  t.match(profile, { result: 'ok', code: 0, data: { miliaoNick: /^user-[0-9a-f]{8}$/ } })
  t.match(contact, { result: 'ok', code: 0, data: { phone: /^\+86 138[0-9]{8}$/, email: /^user-[0-9a-f]{8}@example\.invalid$/ } })
  t.match(await page.locator('.step h3').allTextContents(), ['1. Token endpoint answer (secrets shortened)', 'GET /user/profile → 200', 'GET /user/phoneAndEmail → 200'])
  t.same(statuses.map(([path]) => path), ['/demo', '/demo/start', '/oauth2/authorize', '/oauth2/signin', '/oauth2/signin', '/oauth2/authorize', '/oauth2/authorize', '/demo/callback'], 'the pages the browser went through')

  const callbackShots = await checkLayout(t, page, { name: 'demo-callback', dir: shots, primary: 'h1' })

  // A reload spends nothing again: the page says the sign-in is done, and offers a new one.
  const reload = await page.reload()
  t.equal(reload?.status(), 200, 'a reload of the callback is no error')
  t.equal(await page.textContent('h1'), 'This sign-in was already completed')
  t.notMatch(await page.textContent('main'), /state/i, 'and blames no state mismatch')
  const againShots = await checkLayout(t, page, { name: 'demo-reloaded', dir: shots, primary: '#again' })
  await Promise.all([page.waitForURL((url) => url.pathname === '/oauth2/authorize'), page.click('#again')])
  t.equal(await page.textContent('#account'), 'demo', 'signing in again goes straight to the consent page')

  // The demo app the banner names: an app without a server on an origin of its own, signing in
  // with the code grant and PKCE as a public client, and reading the profile in the page.
  const appUrl = /demo app +(http:\/\/127\.0\.0\.1:[0-9]+\/) /.exec(output.stdout)?.[1] ?? ''
  t.match(output.stdout, /\n {15}its public clients: code\+PKCE=[1-9][0-9]{18} +implicit=[1-9][0-9]{18}\n/, 'the banner names the demo app and its clients')
  t.not(new URL(appUrl).origin, origin, 'on an origin of its own')
  await page.goto(appUrl)
  await page.waitForSelector('body[data-ready=true]')
  const appShots = await checkLayout(t, page, { name: 'demo-app', dir: shots, primary: '#signin' })
  await Promise.all([page.waitForURL((url) => url.pathname === '/oauth2/authorize'), page.click('#signin')])
  t.equal(await page.textContent('h1'), 'Authorize macgate demo app (code + PKCE)', 'signed in already: the consent page names the app')
  await Promise.all([page.waitForURL(appUrl), page.click('button[name=decision][value=allow]')])
  await page.waitForFunction(() => document.querySelectorAll('#results .call').length >= 2)
  t.same(await page.locator('#results .call').evaluateAll((calls) => calls.map((call) => (call as HTMLElement).dataset.status)), ['200', '200'], 'the app\'s two signed calls answered')
  const appSignedInShots = await checkLayout(t, page, { name: 'demo-app-signed-in', dir: shots, primary: '#results .call:first-child h3' })
  for (const shot of [...landingShots, ...callbackShots, ...againShots, ...appShots, ...appSignedInShots]) t.ok(existsSync(shot), `screenshot ${shot}`)
  t.same(consoleErrors, [], 'no error in the browser console (no missing favicon)')

  const sigtermAt = Date.now()
  demo.process.kill('SIGTERM')
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 5000).unref())
  const ended = await Promise.race([exited, timeout])
  t.same(ended, [0, null], `the server exits 0 on SIGTERM (${Date.now() - sigtermAt} ms)`)
  t.notMatch(output.stdout + output.stderr, /"level":(50|60)/, 'no error logged')
})
