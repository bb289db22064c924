// The developer console in a real browser (Debian's Chromium): a developer registers an app and
// sees its secret once, a user signs in with the new app through the code flow (its code exchanged
// with that secret, a signed call made), the developer sees the user counted, edits the app,
// rotates its secret (the old one refused at once, the new one refreshing), and deletes it after a
// confirmation naming the users it signs out (their token refused). Another developer neither sees
// the app nor reaches it by its id; a user not allowed to develop is refused.
import type { Browser, Page } from 'playwright-core'
import t from 'tap'
import { addUser, buildTestApp, callToken } from '../../helpers/app.ts'
import { callbackPage, checkLayout, launch, signIn, skipWithoutChromium } from '../../helpers/browser.ts'
import { signedInject } from '../../helpers/gateway.ts'

async function newTab (browser: Browser, errors: string[]): Promise<Page> {
  const tab = await (await browser.newContext()).newPage()
  tab.setDefaultTimeout(10_000)
  tab.on('console', (message) => { if (message.type() === 'error') errors.push(`${tab.url()}: ${message.text()}`) })
  return tab
}

t.test('the developer console in Chromium: register, secret once, a user signs in with it, edit, rotate, delete', { skip: skipWithoutChromium }, async (t) => {
  const { app, store } = await buildTestApp(t, { developerConsole: 'developers' })
  const origin = await app.listen({ port: 0, host: '127.0.0.1' })
  const redirectUri = await callbackPage(t)
  const alice = await addUser(store, 'alice-dev')
  const carol = await addUser(store, 'carol-dev')
  for (const developer of [alice, carol]) await store.updateUser({ ...(await store.getUserByName(developer.username))!, developer: true })
  const bob = await addUser(store, 'bob-user')
  const browser = await launch(t)
  const dir = t.testdir()
  const errors: string[] = []

  // Alice: to sign-in and back to the console; register an app.
  const tab = await newTab(browser, errors)
  await tab.goto(`${origin}/oauth2/developer`)
  t.equal(new URL(tab.url()).pathname, '/oauth2/signin', 'sign in first')
  await signIn(tab, alice.username, alice.password)
  t.equal(new URL(tab.url()).pathname, '/oauth2/developer', 'back at the console')
  t.ok(await tab.isVisible('#no-apps'), 'no apps yet')
  await Promise.all([tab.waitForURL(/\/oauth2\/developer\/new$/), tab.click('#register')])
  await tab.fill('#name', 'Photo Frame')
  await tab.fill('#redirect_uris', `${redirectUri}\nhttp://example.com/not-https`)
  await Promise.all([tab.waitForLoadState('load'), tab.click('button[type=submit]')])
  t.match(await tab.textContent('#error'), /redirect/i, 'an http redirect URI off loopback refused, as registration refuses it')
  t.equal(await tab.inputValue('#name'), 'Photo Frame', 'the form kept what was typed')
  await tab.fill('#redirect_uris', redirectUri)
  await checkLayout(t, tab, { name: 'register', dir, primary: '#name' })
  await Promise.all([tab.waitForURL(/\/oauth2\/developer\/apps\/\d+$/), tab.click('button[type=submit]')])
  const clientId = tab.url().split('/').pop()!
  const secret = (await tab.textContent('#client-secret'))!
  t.ok(secret.length >= 40, 'the secret shown')
  t.equal(await tab.textContent('.client-id'), clientId)
  await checkLayout(t, tab, { name: 'app', dir, primary: '#client-secret' })
  await tab.reload()
  t.equal(await tab.locator('#client-secret').count(), 0, 'and only once: gone on reload')

  // Bob signs in with the new app (the code flow), marked unverified on the consent page.
  const bobTab = await newTab(browser, errors)
  const authorize = `${origin}/oauth2/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: '1 3', state: 's' }).toString()}`
  await bobTab.goto(authorize)
  await signIn(bobTab, bob.username, bob.password)
  t.ok(await bobTab.isVisible('#unverified'), 'the consent page marks the developer\'s app unverified')
  await Promise.all([bobTab.waitForURL((url) => url.href.startsWith(`${redirectUri}?`)), bobTab.click('button[value=allow]')])
  const code = new URL(bobTab.url()).searchParams.get('code')!
  const exchanged = await callToken(app, { client_id: clientId, client_secret: secret, redirect_uri: redirectUri, grant_type: 'authorization_code', code })
  t.equal(exchanged.status, 200, 'the code exchanged with the secret shown')
  const tokens = exchanged.body as Record<string, string>
  const call = async () => (await signedInject(app, { url: '/user/profile', token: tokens.access_token!, macKey: tokens.mac_key! })).statusCode
  t.equal(await call(), 200, 'a signed call with the app\'s token')

  // The console counts bob.
  await tab.goto(`${origin}/oauth2/developer`)
  t.equal(await tab.textContent(`li[data-client-id="${clientId}"] .users`), '1 user has authorized it')
  t.equal(await tab.textContent(`li[data-client-id="${clientId}"] .type`), 'confidential (has a secret)')
  await checkLayout(t, tab, { name: 'console', dir, primary: '#register' })

  // Carol: a developer too, but not of this app.
  const carolTab = await newTab(browser, errors)
  await carolTab.goto(`${origin}/oauth2/developer`)
  await signIn(carolTab, carol.username, carol.password)
  t.equal(await carolTab.locator(`li[data-client-id="${clientId}"]`).count(), 0, 'carol does not see alice\'s app')
  for (const path of ['', '/delete']) {
    const answer = await carolTab.goto(`${origin}/oauth2/developer/apps/${clientId}${path}`)
    t.equal(answer?.status(), 404, `nor reaches it by its id (${path || 'its page'})`)
    t.ok(await carolTab.isVisible('#no-such-app'))
  }

  // Bob may not develop.
  const refused = await bobTab.goto(`${origin}/oauth2/developer`)
  t.equal(refused?.status(), 403, 'a user not allowed to develop: refused')
  t.ok(await bobTab.isVisible('#not-allowed'))

  // Alice edits the app.
  await tab.goto(`${origin}/oauth2/developer/apps/${clientId}`)
  await tab.fill('#name', 'Photo Frame Pro')
  await tab.fill('#allowed_origins', 'https://frame.example')
  await Promise.all([tab.waitForURL(/\/apps\/\d+$/), tab.click('#save')])
  t.equal(await tab.textContent('#notice'), 'Saved.')
  t.equal(await tab.textContent('#app-name'), 'Photo Frame Pro')
  t.equal(await tab.textContent('.allowed-origins'), 'https://frame.example')

  // Rotates the secret, the old one stopping at once.
  await tab.selectOption('#grace', '0')
  await Promise.all([tab.waitForURL(/\/apps\/\d+$/), tab.click('#rotate')])
  const rotated = (await tab.textContent('#client-secret'))!
  t.not(rotated, secret, 'a new secret, shown once')
  const refresh = (clientSecret: string) => callToken(app, { client_id: clientId, client_secret: clientSecret, grant_type: 'refresh_token', redirect_uri: redirectUri, refresh_token: tokens.refresh_token! })
  const old = await refresh(secret)
  t.equal(old.status, 401, 'the old secret refused at once (grace 0)')
  t.match(old.body, { error: 96003 }, 'the dialect\'s invalid client')
  const refreshed = await refresh(rotated)
  t.equal(refreshed.status, 200, 'the new secret refreshes bob\'s token')
  Object.assign(tokens, refreshed.body)

  // Deletes it, told how many users it signs out.
  await Promise.all([tab.waitForURL(/\/delete$/), tab.click('#delete')])
  t.match(await tab.textContent('#consequence'), /signs 1 user out of it/)
  await checkLayout(t, tab, { name: 'delete', dir, primary: '#confirm-delete' })
  await Promise.all([tab.waitForURL(/\/oauth2\/developer$/), tab.click('#confirm-delete')])
  t.equal(await tab.textContent('#notice'), 'Deleted Photo Frame Pro.')
  t.ok(await tab.isVisible('#no-apps'), 'no apps left')
  t.equal(await store.getClient(clientId), undefined)
  t.equal(await call(), 401, 'bob signed out of it: his token refused')
  // The refusals the test asked for (400, 403, 404) are logged by Chromium as failed loads: only those.
  t.same(errors.filter((line) => !/Failed to load resource: the server responded with a status of 40[034]/.test(line)), [], 'no other console errors')
})
