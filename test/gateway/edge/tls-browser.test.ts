// The sign-in and consent pages in Chromium over TLS and HTTP/2: the browser trusts the test's
// certificate by its key (--ignore-certificate-errors-spki-list), as it would a real one; nothing
// else about certificate errors is waived.
import t from 'tap'
import { buildGateway } from '../../../gateway/index.ts'
import { MemoryStore } from '../../../plugin/index.ts'
import { addClient, addUser } from '../../helpers/app.ts'
import { launch, signIn, skipWithoutChromium } from '../../helpers/browser.ts'
import { testCa } from '../../helpers/certs.ts'

t.test('sign in and allow in Chromium over HTTPS and HTTP/2', { skip: skipWithoutChromium }, async (t) => {
  const ca = await testCa(t.testdir())
  const pair = await ca.issue('browser', ['localhost'])
  const store = new MemoryStore()
  const app = await buildGateway({ store, config: { tls: [{ cert: pair.cert, key: pair.key }] } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(async () => { await app.close(); await store.close() })
  const origin = `https://localhost:${(app.server.address() as { port: number }).port}`
  // The client's callback: a path on the gateway itself (a 404 page there; only its URL is read).
  const redirectUri = `${origin}/client/callback`
  const { clientId } = await addClient(store, { scope: '1 3', redirectUris: [redirectUri] })
  const user = await addUser(store)

  const browser = await launch(t, { extraArgs: [`--ignore-certificate-errors-spki-list=${pair.spki}`, '--host-resolver-rules=MAP localhost 127.0.0.1'] })
  const context = await browser.newContext()
  const tab = await context.newPage()
  tab.setDefaultTimeout(15_000)
  const authorize = `${origin}/oauth2/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: '1 3', state: 'tls' }).toString()}`

  const first = await tab.goto(authorize)
  t.equal(first?.status(), 200, 'the sign-in page, over TLS the browser trusts')
  t.match(tab.url(), `${origin}/oauth2/signin`)
  t.equal(await tab.evaluate(() => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).nextHopProtocol), 'h2', 'over HTTP/2')
  t.equal(await first?.headerValue('strict-transport-security'), 'max-age=31536000')
  t.match((await first?.securityDetails())?.protocol ?? '', /^TLS 1\.[23]$/)

  await signIn(tab, user.username, user.password)
  t.match(tab.url(), `${origin}/oauth2/authorize`, 'back at the consent page')
  const cookies = await context.cookies(`${origin}/oauth2/authorize`)
  const session = cookies.find((cookie) => cookie.name === 'macgate_session')
  t.ok(session?.secure, 'the session cookie is Secure')
  t.equal(session?.httpOnly, true)

  await Promise.all([tab.waitForURL((url) => url.href.startsWith(redirectUri)), tab.click('button[value=allow]')])
  const callback = new URL(tab.url())
  t.equal(callback.searchParams.get('state'), 'tls')
  t.match(callback.searchParams.get('code'), /.+/, 'a code came back')
})
