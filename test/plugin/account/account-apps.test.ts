// /account/apps through the public surface: a user authorizes apps through the real flow, sees
// them listed with what each may do, and removes one's access: its tokens stop working at once (on
// this instance and, through the revocation channel, on another one sharing the store), its
// refresh token is refused, and the next authorization asks again even with skip_confirm.
import { randomBytes } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import type { AuditEvent } from '../../../plugin/index.ts'
import { addClient, addUser, authorizeUrl, buildTestApp, callToken, InjectBrowser, REDIRECT_URI, type TestApp } from '../../helpers/app.ts'
import { signedInject } from '../../helpers/gateway.ts'
import { liveGateway, pollUntilRefused, refreshExchange, signedGet, tokenRequest } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'

/** The apps page (where the session cookie goes); `/account/apps` redirects here. */
const APPS = '/oauth2/account/apps'

const REVOKED = { result: 'error', description: 'access token invalid or expired', code: 96008 }

interface Tokens { access_token: string, mac_key: string, refresh_token: string }

/** One listed app as the page shows it. */
interface Listed { clientId: string, name: string, permissions: string[], datetime: string, csrf: string }

const unescape = (text: string) => text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&')

/** The page's `li.app` items, read with patterns (the page's markup is the contract). */
function listed (html: string): Listed[] {
  return html.split('<li class="app" ').slice(1).map((item) => ({
    clientId: /^data-client-id="([^"]*)"/.exec(item)?.[1] ?? '',
    name: unescape(/<h3>([\s\S]*?)<\/h3>/.exec(item)?.[1] ?? ''),
    permissions: [.../<div class="checks"><ul>([\s\S]*?)<\/ul>/.exec(item)?.[1]?.matchAll(/<li>([\s\S]*?)<\/li>/g) ?? []].map((match) => unescape(match[1]!)),
    datetime: /<time datetime="([^"]+)">/.exec(item)?.[1] ?? '',
    csrf: /name="_csrf" value="([^"]+)"/.exec(item)?.[1] ?? ''
  }))
}

const noticeOf = (html: string): string | undefined => {
  const match = /<p id="notice"[^>]*>([\s\S]*?)<\/p>/.exec(html)
  return match === null ? undefined : unescape(match[1]!)
}

function codeUrl (clientId: string, scope: string, extra: Record<string, string> = {}): string {
  return authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope, state: 'st', ...extra })
}

/**
 * The user (signed in on `browser`) authorizes the client with skip_confirm=true the first time:
 * the consent page is shown, allowed, and the code exchanged. Resolves to the token set.
 */
async function authorizeApp (t: Test, app: FastifyInstance, browser: InjectBrowser, client: { clientId: string, clientSecret: string }, scope: string): Promise<Tokens> {
  const url = codeUrl(client.clientId, scope, { skip_confirm: 'true' })
  const page = await browser.get(url)
  t.equal(page.statusCode, 200, `${client.clientId}: first authorization shows the consent page even with skip_confirm`)
  const allowed = await browser.post(url, { decision: 'allow' })
  t.equal(allowed.statusCode, 303, 'allowed')
  const code = new URL(String(allowed.headers.location)).searchParams.get('code')!
  const answer = await callToken(app, { client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code })
  t.equal(answer.status, 200, 'code exchanged')
  return answer.body as unknown as Tokens
}

/** The gateway on the embedded store, with every audit event it records kept. */
async function auditedApp (t: Test): Promise<TestApp & { events: AuditEvent[] }> {
  const { app, store } = await buildTestApp(t)
  const events: AuditEvent[] = []
  app.macgate.events.on('audit', (event) => { events.push(event) })
  return { app, store, events }
}

async function apiCall (app: FastifyInstance, url: string, tokens: Tokens): Promise<LightMyRequestResponse> {
  return await signedInject(app, { url, token: tokens.access_token, macKey: tokens.mac_key })
}

t.test('the apps page lists what the user authorized; Remove access revokes it and asks again', async (t) => {
  const started = Date.now()
  const { app, store, events } = await auditedApp(t)
  const printer = await addClient(store, { name: 'Photo Printer', scope: '1 3' })
  const calendar = await addClient(store, { name: 'Calendar Sync', scope: '4 6' })
  const elsewhere = await addClient(store, { name: 'Somebody Else\'s App', scope: '1' })
  const user = await addUser(store)
  const other = await addUser(store)

  const browser = new InjectBrowser(app)
  t.equal((await browser.signIn(user.username, user.password)).statusCode, 200, 'signed in')
  const empty = await browser.get(APPS)
  t.equal(empty.statusCode, 200)
  t.match(empty.body, '<p id="no-apps">', 'no apps yet: #no-apps')
  t.same(listed(empty.body), [])

  const printerTokens = await authorizeApp(t, app, browser, printer, '1 3')
  const calendarTokens = await authorizeApp(t, app, browser, calendar, '4 6')
  const otherBrowser = new InjectBrowser(app)
  await otherBrowser.signIn(other.username, other.password)
  const elsewhereTokens = await authorizeApp(t, app, otherBrowser, elsewhere, '1')

  const page = await browser.get(APPS)
  t.equal(page.statusCode, 200)
  t.equal(page.headers['content-type'], 'text/html; charset=utf-8')
  t.equal(page.headers['cache-control'], 'no-store', 'not cached')
  t.notMatch(page.body, 'id="no-apps"', 'no #no-apps when there are apps')
  t.equal(noticeOf(page.body), undefined, 'no notice before any removal')
  t.match(page.body, `<strong>${user.username}</strong>`, 'names the signed-in user')
  const apps = listed(page.body)
  t.same(apps.map(({ clientId, name, permissions }) => ({ clientId, name, permissions })).sort((a, b) => a.name.localeCompare(b.name)), [
    { clientId: calendar.clientId, name: 'Calendar Sync', permissions: ['Phone number', 'Email address'] },
    { clientId: printer.clientId, name: 'Photo Printer', permissions: ['Profile', 'Open ID'] }
  ], 'both apps, with their permissions by the registry\'s descriptions, and not another user\'s app')
  t.notMatch(page.body, 'Somebody Else', 'the other user\'s app is not on this page')
  for (const listedApp of apps) {
    const at = Date.parse(listedApp.datetime)
    t.ok(at >= started - 1000 && at <= Date.now() + 1000, `${listedApp.name}: <time> is when it was authorized (${listedApp.datetime})`)
    t.ok(listedApp.csrf.length > 0, `${listedApp.name}: its form carries a CSRF token`)
  }
  const otherPage = listed((await otherBrowser.get(APPS)).body)
  t.same(otherPage.map(({ clientId }) => clientId), [elsewhere.clientId], 'the other user sees only their own app')

  t.equal((await apiCall(app, '/user/profile', printerTokens)).statusCode, 200, 'Photo Printer\'s token works')
  t.equal((await apiCall(app, '/user/phoneAndEmail', calendarTokens)).statusCode, 200, 'Calendar Sync\'s token works')

  // Without the CSRF token: refused, nothing removed.
  const forged = await browser.post(`${APPS}/remove`, { client_id: printer.clientId }, { csrf: false })
  t.ok(forged.statusCode >= 400 && forged.statusCode < 500, `no CSRF token: a 4xx (${forged.statusCode})`)
  t.match(forged.headers['content-type'], /^text\/html/, 'answered with a page')
  const wrongCsrf = await browser.post(`${APPS}/remove`, { client_id: printer.clientId, _csrf: 'not-a-token' }, { csrf: false })
  t.ok(wrongCsrf.statusCode >= 400 && wrongCsrf.statusCode < 500, `a wrong CSRF token: a 4xx (${wrongCsrf.statusCode})`)
  // The other user's valid token and session do not remove this user's app either.
  await otherBrowser.get(APPS)
  const crossUser = await otherBrowser.post(`${APPS}/remove`, { client_id: printer.clientId })
  t.equal(crossUser.statusCode, 303, 'the other user may post (for their own account)')
  t.equal((await apiCall(app, '/user/profile', printerTokens)).statusCode, 200, 'still works after the refused and the other user\'s posts')
  t.same(listed((await browser.get(APPS)).body).map(({ clientId }) => clientId).sort(), [printer.clientId, calendar.clientId].sort(), 'still both listed')
  t.same(events.filter((event) => event.type === 'consent.revoked' && event.userId === user.userId), [], 'no consent.revoked for this user yet')

  // Remove access, with the page's CSRF token and the session cookie.
  await browser.get(APPS)
  const removed = await browser.post(`${APPS}/remove`, { client_id: printer.clientId })
  t.equal(removed.statusCode, 303, 'a 303 after the POST')
  t.equal(removed.headers.location, APPS, 'back to the page (the notice travels in the session)')
  const after = await browser.get(String(removed.headers.location))
  t.equal(after.statusCode, 200)
  t.match(noticeOf(after.body), /Photo Printer/, `#notice names the app: ${noticeOf(after.body)}`)
  t.same(listed(after.body).map(({ clientId }) => clientId), [calendar.clientId], 'only Calendar Sync left')

  const refused = await apiCall(app, '/user/profile', printerTokens)
  t.equal(refused.statusCode, 401, 'Photo Printer\'s access token is refused')
  t.same(JSON.parse(refused.body), REVOKED)
  const refresh = await callToken(app, { client_id: printer.clientId, client_secret: printer.clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'refresh_token', refresh_token: printerTokens.refresh_token })
  t.equal(refresh.status, 400, 'its refresh token is refused')
  t.equal(refresh.body.error, 96009, 'as an invalid refresh token')
  t.equal((await apiCall(app, '/user/phoneAndEmail', calendarTokens)).statusCode, 200, 'Calendar Sync\'s token still works')
  t.equal((await apiCall(app, '/user/profile', elsewhereTokens)).statusCode, 200, 'the other user\'s app still works')
  const calendarRefresh = await callToken(app, { client_id: calendar.clientId, client_secret: calendar.clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'refresh_token', refresh_token: calendarTokens.refresh_token })
  t.equal(calendarRefresh.status, 200, 'Calendar Sync\'s refresh token still works')

  t.match(events.filter((event) => event.type === 'consent.revoked' && event.userId === user.userId), [{ type: 'consent.revoked', clientId: printer.clientId, userId: user.userId, grants: 1 }], 'one consent.revoked event')

  // The next authorization asks again, even with skip_confirm=true.
  const again = await browser.get(codeUrl(printer.clientId, '1 3', { skip_confirm: 'true' }))
  t.equal(again.statusCode, 200, 'the consent page again, not a redirect with a code')
  t.equal(again.headers.location, undefined)
  t.match(again.body, 'Photo Printer')
  // Calendar Sync's consent is untouched: skip_confirm still skips.
  const skipped = await browser.get(codeUrl(calendar.clientId, '4 6', { skip_confirm: 'true' }))
  t.equal(skipped.statusCode, 302, 'the kept app: skip_confirm still goes straight back')
  t.match(String(skipped.headers.location), /[?&]code=/)

  // Removing the last one: #no-apps.
  await browser.get(APPS)
  const last = await browser.post(`${APPS}/remove`, { client_id: calendar.clientId })
  const none = await browser.get(String(last.headers.location))
  t.match(none.body, '<p id="no-apps">', '#no-apps after removing every app')
  t.match(noticeOf(none.body), /Calendar Sync/)
  t.equal((await apiCall(app, '/user/phoneAndEmail', calendarTokens)).statusCode, 401)
  t.same(await store.listUserGrants(user.userId), [], 'the user\'s grant index is empty')
  t.same(await store.listConsents(user.userId), [], 'no consents left')
})

t.test('not signed in: to sign-in with return_to=/oauth2/account/apps, and signing in returns there', async (t) => {
  const { app, store } = await buildTestApp(t)
  const user = await addUser(store)
  const short = await app.inject('/account/apps')
  t.equal(short.statusCode, 302, '/account/apps leads to the page')
  t.equal(short.headers.location, APPS)
  const anonymous = await app.inject(APPS)
  t.equal(anonymous.statusCode, 302)
  t.equal(anonymous.headers.location, '/oauth2/signin?return_to=%2Foauth2%2Faccount%2Fapps')

  const browser = new InjectBrowser(app)
  const signInPage = await browser.get(String(anonymous.headers.location))
  t.equal(signInPage.statusCode, 200)
  t.match(signInPage.body, /name="return_to" value="\/oauth2\/account\/apps"/, 'the form carries return_to')
  const signedIn = await browser.post('/oauth2/signin', { username: user.username, password: user.password, return_to: APPS })
  t.equal(signedIn.statusCode, 303)
  t.equal(signedIn.headers.location, APPS, 'back to the apps page')
  // A browser sends the session cookie only under its Path: it must cover the page (and the
  // removal form's action), or the page sends a signed-in user to sign-in for ever.
  const setCookie = ([] as string[]).concat(signedIn.headers['set-cookie'] ?? [])
  const session = setCookie.find((line) => line.startsWith('macgate_session='))
  t.ok(session !== undefined, 'the sign-in sets the session cookie')
  const path = /;\s*Path=([^;]*)/i.exec(session ?? '')?.[1] ?? '/'
  t.ok([APPS, `${APPS}/remove`].every((url) => url === path || url.startsWith(path.endsWith('/') ? path : `${path}/`)), `the session cookie's Path (${path}) covers ${APPS}`)
  const page = await browser.get(APPS)
  t.equal(page.statusCode, 200)
  t.match(page.body, '<p id="no-apps">')

  const anonymousPost = await app.inject({ method: 'POST', url: `${APPS}/remove`, payload: 'client_id=123', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.ok(anonymousPost.statusCode >= 300 && anonymousPost.statusCode < 500, `an anonymous POST is refused or sent to sign-in (${anonymousPost.statusCode})`)
  t.not(anonymousPost.statusCode, 200)
})

t.test('a forged ?removed= of an app still authorized shows no notice; names are escaped', async (t) => {
  const { app, store } = await buildTestApp(t)
  const evilName = '<script>alert("x")</script> & Co'
  const evil = await addClient(store, { name: evilName, scope: '1' })
  const user = await addUser(store)
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  await authorizeApp(t, app, browser, evil, '1')

  const forged = await browser.get(`${APPS}?removed=${evil.clientId}`)
  t.equal(forged.statusCode, 200)
  t.equal(noticeOf(forged.body), undefined, 'no notice for an app that is still authorized')
  t.notMatch(forged.body, 'id="notice"')
  for (const junk of ['<b>x</b>', 'abc', '1'.repeat(40), '']) {
    const page = await browser.get(`${APPS}?${new URLSearchParams({ removed: junk }).toString()}`)
    t.equal(page.statusCode, 200, `removed=${JSON.stringify(junk)}: the page`)
    t.notMatch(page.body, '<b>x</b>', 'nothing of the parameter reflected')
  }

  t.notMatch(forged.body, '<script>alert', 'the name is not markup')
  t.match(forged.body, '&lt;script&gt;alert(', 'the name escaped')
  t.same(listed(forged.body).map(({ name }) => name), [evilName], 'and reads back as the name')

  await browser.get(APPS)
  const removed = await browser.post(`${APPS}/remove`, { client_id: evil.clientId })
  const after = await browser.get(String(removed.headers.location))
  t.notMatch(after.body, '<script>alert', 'the notice escapes the name too')
  t.equal(noticeOf(after.body)?.includes(evilName), true, 'the notice names it')

  // A malformed client_id is refused, not a crash.
  await browser.get(APPS)
  const malformed = await browser.post(`${APPS}/remove`, { client_id: 'not-an-id' })
  t.ok(malformed.statusCode >= 400 && malformed.statusCode < 500, `malformed client_id: ${malformed.statusCode}`)
})

t.test('a removal left half-done is listed to finish; a removed client is hidden; removing nothing says nothing', async (t) => {
  const { app, store, events } = await auditedApp(t)
  const halfRemoved = await addClient(store, { name: 'Half Removed', scope: '1' })
  const gone = await addClient(store, { name: 'Gone Client', scope: '1' })
  const never = await addClient(store, { name: 'Never Authorized', scope: '1' })
  const user = await addUser(store)
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  const halfTokens = await authorizeApp(t, app, browser, halfRemoved, '1')
  await authorizeApp(t, app, browser, gone, '1')

  // The consent forgotten but a grant left, as a removal cut off by a store failure leaves it.
  await store.forgetConsent(user.userId, halfRemoved.clientId)
  // A client removed from the store behind the page's back: its consent has nothing to show.
  await store.removeClient(gone.clientId)
  const page = await browser.get(APPS)
  t.same(listed(page.body).map(({ clientId, permissions, datetime }) => ({ clientId, permissions, datetime })), [
    { clientId: halfRemoved.clientId, permissions: [], datetime: '' }
  ], 'only the half-removed app, with no permissions or date (its consent is gone)')
  t.match(page.body, 'not fully removed: remove it again', 'and the prompt to finish the removal')
  t.notMatch(page.body, 'Gone Client', 'the removed client is not listed')

  const finished = await browser.post(`${APPS}/remove`, { client_id: halfRemoved.clientId })
  const after = await browser.get(String(finished.headers.location))
  t.match(noticeOf(after.body), /Half Removed/, 'removing again finishes it, with the notice')
  t.equal((await apiCall(app, '/user/profile', halfTokens)).statusCode, 401, 'its token is refused')
  t.match(events.filter((event) => event.type === 'consent.revoked'), [{ clientId: halfRemoved.clientId, grants: 1 }], 'counted as one grant revoked')

  // The removed client's consent is still the user's to drop: the notice cannot name it.
  await browser.get(APPS)
  const dropped = await browser.post(`${APPS}/remove`, { client_id: gone.clientId })
  t.equal(noticeOf((await browser.get(String(dropped.headers.location))).body), 'Access removed for the app. It must ask you again before it can act for you.')
  t.same(await store.listConsents(user.userId), [], 'no consent left')

  // An app the user never authorized: nothing removed, no notice, no event.
  await browser.get(APPS)
  const nothing = await browser.post(`${APPS}/remove`, { client_id: never.clientId })
  t.equal(nothing.statusCode, 303)
  t.equal(noticeOf((await browser.get(APPS)).body), undefined, 'no notice')
  t.equal(events.filter((event) => event.type === 'consent.revoked').length, 2, 'no event for it')
})

t.test('two instances on one Redis: Remove access on A is refused on B within 100 ms', async (t) => {
  const redis = await startRedis(t)
  const secret = randomBytes(32).toString('base64url')
  const a = await liveGateway(t, redis, secret)
  const b = await liveGateway(t, redis, secret)
  const printer = await addClient(a.store, { name: 'Photo Printer', scope: '1 3' })
  const calendar = await addClient(a.store, { name: 'Calendar Sync', scope: '1 4 6' })
  const user = await addUser(a.store)
  const browser = new InjectBrowser(a.app)
  await browser.signIn(user.username, user.password)
  const printerTokens = await authorizeApp(t, a.app, browser, printer, '1 3')
  const calendarTokens = await authorizeApp(t, a.app, browser, calendar, '1 4 6')

  for (const [name, origin] of [['A', a.origin], ['B', b.origin]] as const) {
    t.equal((await signedGet(origin, '/user/profile', printerTokens)).status, 200, `${name} serves (and caches) Photo Printer's token`)
    t.equal((await signedGet(origin, '/user/profile', calendarTokens)).status, 200, `${name} serves Calendar Sync's token`)
  }
  t.same(listed((await browser.get(APPS)).body).map(({ name }) => name).sort(), ['Calendar Sync', 'Photo Printer'])

  const clicked = Date.now()
  const removed = await browser.post(`${APPS}/remove`, { client_id: printer.clientId })
  t.equal(removed.statusCode, 303)
  // Measured from the removal's answer: by then A's store has revoked and published.
  const since = Date.now()
  t.comment(`the removal (consent forgotten, grants revoked, on Redis) took ${since - clicked} ms`)
  const onA = await signedGet(a.origin, '/user/profile', printerTokens)
  t.equal(onA.status, 401, 'refused at once on A')
  t.same(onA.body, REVOKED)
  const { last, elapsed, polls } = await pollUntilRefused(b.origin, '/user/profile', printerTokens, since, 1000)
  t.comment(`B refused the removed app's token ${elapsed} ms after the removal answered (${polls} polls, every 10 ms)`)
  t.same(last.body, REVOKED, 'B refuses it with 96008')
  t.ok(elapsed <= 100, `within 100 ms (${elapsed} ms)`)

  const refresh = await tokenRequest(b.origin, refreshExchange(printer.clientId, printer.clientSecret, printerTokens.refresh_token))
  t.equal(refresh.status, 400, 'refresh refused on B')
  t.equal(refresh.body.error, 96009)
  t.equal((await signedGet(b.origin, '/user/profile', calendarTokens)).status, 200, 'the other app still works on B')
  t.equal((await signedGet(a.origin, '/user/profile', calendarTokens)).status, 200, 'and on A')
  // The same session on B (one secret, one store): B asks again too.
  const onB = new InjectBrowser(b.app)
  onB.cookie = browser.cookie
  const againOnB = await onB.get(codeUrl(printer.clientId, '1 3', { skip_confirm: 'true' }))
  t.equal(againOnB.statusCode, 200, 'B: the consent page again, not a code')
  const again = await browser.get(codeUrl(printer.clientId, '1 3', { skip_confirm: 'true' }))
  t.equal(again.statusCode, 200, 'A: the consent page again')
  t.same(await b.store.listConsents(user.userId).then((consents) => consents.map(({ clientId }) => clientId)), [calendar.clientId], 'the store keeps only the other consent')
})
