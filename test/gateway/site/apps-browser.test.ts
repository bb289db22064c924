// The authorized-apps page in a real browser: sign in, authorize an app, open /account/apps, see
// the app and what it may do, click "Remove access", see the notice and the app gone; the page is
// photographed at a desktop and a phone width (no horizontal scrolling) into the test's own dir.
import { existsSync } from 'node:fs'
import type { Page } from 'playwright-core'
import t from 'tap'
import { addClient, addUser, buildTestApp, callToken } from '../../helpers/app.ts'
import { callbackPage, checkLayout, launch, signIn, skipWithoutChromium } from '../../helpers/browser.ts'
import { signedInject } from '../../helpers/gateway.ts'

/** How a permissions list is drawn: its items' bullet, its border, its left padding. */
async function listLook (tab: Page, selector: string): Promise<{ bullet: string, border: string, paddingLeft: string, check: string }> {
  return await tab.locator(selector).evaluate((list) => {
    const item = list.querySelector('li')!
    return {
      bullet: getComputedStyle(item).listStyleType,
      border: getComputedStyle(list).borderTopStyle,
      paddingLeft: getComputedStyle(list).paddingLeft,
      check: getComputedStyle(item, '::before').content
    }
  })
}

t.test('authorized apps in Chromium: listed with permissions, Remove access, notice, gone', { skip: skipWithoutChromium }, async (t) => {
  const { app, store } = await buildTestApp(t)
  const origin = await app.listen({ port: 0, host: '127.0.0.1' })
  const redirectUri = await callbackPage(t)
  const printer = await addClient(store, { name: 'Photo Printer', scope: '1 3 4 6', redirectUris: [redirectUri] })
  const user = await addUser(store, 'alice', 'correct horse battery')
  const browser = await launch(t)
  const dir = t.testdir()
  const context = await browser.newContext()
  const consoleErrors: string[] = []
  const tab = await context.newPage()
  tab.setDefaultTimeout(10_000)
  tab.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(`${tab.url()}: ${message.text()}`) })

  // Authorize: sign in, allow.
  const authorize = `${origin}/oauth2/authorize?${new URLSearchParams({ client_id: printer.clientId, redirect_uri: redirectUri, response_type: 'code', scope: '1 3 4 6', state: 's' }).toString()}`
  await tab.goto(authorize)
  t.equal(new URL(tab.url()).pathname, '/oauth2/signin', 'the sign-in page first')
  await signIn(tab, user.username, user.password)
  t.equal(await tab.textContent('h1'), 'Authorize Photo Printer', 'the consent page')
  const consentList = await listLook(tab, '#permissions')
  await Promise.all([tab.waitForURL((url) => url.href.startsWith(`${redirectUri}?`)), tab.click('button[value=allow]')])
  const code = new URL(tab.url()).searchParams.get('code')!
  const exchanged = await callToken(app, { client_id: printer.clientId, client_secret: printer.clientSecret, redirect_uri: redirectUri, grant_type: 'authorization_code', code })
  t.equal(exchanged.status, 200, 'the code exchanged')
  const tokens = exchanged.body as Record<string, string>
  const call = async () => (await signedInject(app, { url: '/user/profile', token: tokens.access_token!, macKey: tokens.mac_key! })).statusCode
  t.equal(await call(), 200, 'the token works')

  // The apps page, with the browser's own session (its cookie as the browser scopes it).
  await tab.goto(`${origin}/account/apps`)
  t.equal(new URL(tab.url()).pathname, '/oauth2/account/apps', `the apps page itself, not sign-in (at ${tab.url()})`)
  if (new URL(tab.url()).pathname !== '/oauth2/account/apps') {
    // Sent to sign-in although signed in: the browser did not send the session cookie here. Say
    // where the cookie is scoped, and whether signing in from here comes back (or loops).
    await tab.screenshot({ path: `${dir}/apps-redirected.png`, fullPage: true })
    const cookies = await context.cookies()
    t.comment(`the browser's cookies: ${JSON.stringify(cookies.map(({ name, path }) => ({ name, path })))}`)
    await tab.fill('input[name=username]', user.username)
    await tab.fill('input[name=password]', user.password)
    await Promise.all([tab.waitForResponse((response) => response.request().method() === 'POST' && new URL(response.url()).pathname === '/oauth2/signin'), tab.click('button[type=submit]')])
    await tab.waitForLoadState('load')
    t.equal(new URL(tab.url()).pathname, '/oauth2/account/apps', `signing in from the redirect returns to the apps page (at ${tab.url()})`)
    // So that the rest (the listing, removal, screenshots) can still be checked: a copy of the
    // session cookie scoped to the whole site. Not taken once the page works in a browser.
    const session = (await context.cookies()).find(({ name }) => name === 'macgate_session')
    if (session === undefined) return
    await context.addCookies([{ ...session, path: '/' }])
    await tab.goto(`${origin}/account/apps`)
    t.comment(`with the session cookie copied to path "/": at ${tab.url()}`)
  }
  t.equal(await tab.textContent('h1'), 'Your authorized apps')
  const item = tab.locator(`li.app[data-client-id="${printer.clientId}"]`)
  t.equal(await item.count(), 1, 'the app is listed')
  t.equal(await item.locator('h3').textContent(), 'Photo Printer')
  t.same(await item.locator('.checks li').allTextContents(), ['Profile', 'Open ID', 'Phone number', 'Email address'], 'its permissions, by their descriptions')
  // The permissions drawn as on the consent page: a check mark each, no list bullet, one box.
  const appsList = await listLook(tab, `li.app[data-client-id="${printer.clientId}"] .checks ul`)
  t.same(appsList, consentList, `the permissions look as on the consent page (${JSON.stringify(appsList)} vs ${JSON.stringify(consentList)})`)
  t.match(await item.locator('time').getAttribute('datetime'), /^\d{4}-\d\d-\d\dT/, 'when it was authorized')
  t.ok(await item.locator('button', { hasText: 'Remove access' }).isVisible(), 'a visible Remove access button')
  const listedShots = await checkLayout(t, tab, { name: 'apps', dir, primary: `li.app[data-client-id="${printer.clientId}"] button` })

  await Promise.all([tab.waitForNavigation(), item.locator('button', { hasText: 'Remove access' }).click()])
  t.equal(new URL(tab.url()).pathname, '/oauth2/account/apps', 'back on the page after the POST')
  t.match(await tab.textContent('#notice'), /Photo Printer/, 'the notice names the app')
  t.ok(await tab.locator('#notice').isVisible(), 'and is visible')
  t.equal(await tab.locator('li.app').count(), 0, 'the app is gone')
  t.ok(await tab.locator('#no-apps').isVisible(), '#no-apps shown')
  const removedShots = await checkLayout(t, tab, { name: 'apps-removed', dir, primary: '#notice' })
  for (const shot of [...listedShots, ...removedShots]) t.ok(existsSync(shot), `screenshot ${shot}`)
  t.comment(`screenshots in ${dir}`)
  t.equal(await call(), 401, 'the token is refused after Remove access')
  t.same(consoleErrors.filter((line) => line.startsWith(origin)), [], 'no console errors on the gateway\'s pages')
  await context.close()
})
