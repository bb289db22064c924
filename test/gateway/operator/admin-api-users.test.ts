// The admin API's users: create, change the password, list and revoke grants, remove, and their
// refusals; and that removing a user through the API does exactly what `macgate users remove` does.
import t from 'tap'
import { addClient, addUser, buildTestApp, InjectBrowser } from '../../helpers/app.ts'
import { eventually } from '../../helpers/live.ts'
import { cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { startRedis } from '../../helpers/redis.ts'
import { grantTokens } from '../../helpers/grants.ts'
import { adminFor, assertBadRequest, assertNotFound, call, ISO, profile, recorder, refresh, REVOKED, sessionStatus } from '../../helpers/admin-api.ts'

t.test('users: create, change the password, list and revoke grants, remove; and their refusals', async (t) => {
  const { app, store } = await buildTestApp(t)
  const admin = await adminFor(t, app)
  const events = recorder(app)
  const printer = await addClient(store, { name: 'Photo Printer', scope: '1 3' })
  const calendar = await addClient(store, { name: 'Calendar Sync', scope: '1 4' })

  const created = await call(admin, 'POST', '/admin/users', { username: 'carol', password: 'correct horse battery' })
  t.equal(created.status, 201)
  t.match(created.body, { user_id: /^[0-9a-f-]{36}$/, username: 'carol' })
  t.same(Object.keys(created.body).sort(), ['user_id', 'username'], 'nothing else (no hash)')
  const userId = created.body.user_id as string
  t.match(events.at(-1), { type: 'user.created', userId, username: 'carol' })
  t.match((await store.getUserByName('carol'))?.passwordHash, /^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/, 'stored as scrypt at the default cost (N=2^15, r=8, p=1), salted')

  const eventsBefore = events.length
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 'carol', password: 'another long one' }), 'a taken username', /taken/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 'a b', password: 'correct horse battery' }), 'a bad username', /username/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 'dave', password: 'short' }), 'a short password', /password/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 'dave' }), 'no password', /password/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 'dave', password: 'correct horse battery', admin: true }), 'an unknown field', /admin|additional/)
  assertBadRequest(t, await call(admin, 'POST', '/admin/users', { username: 42, password: 'correct horse battery' }), 'a number for the username')
  t.equal(await store.getUserByName('dave'), undefined, 'no dave was made')
  t.equal(events.length, eventsBefore, 'no event for a refusal')

  const browser = new InjectBrowser(app)
  t.equal((await browser.signIn('carol', 'correct horse battery')).statusCode, 200, 'the created user signs in')
  const printerTokens = await grantTokens(t, app, browser, printer, '1 3')
  const calendarTokens = await grantTokens(t, app, browser, calendar, '1 4')

  const grants = await call(admin, 'GET', '/admin/users/carol/grants')
  t.equal(grants.status, 200)
  t.equal(grants.body.length, 2, 'two grants')
  t.same(grants.body.map((grant: { client_id: string }) => grant.client_id).sort(), [printer.clientId, calendar.clientId].sort())
  for (const grant of grants.body) {
    t.match(grant, { grant_id: /\S/, client_id: /^\d+$/, until: ISO })
    t.ok(Date.parse(grant.until) > Date.now(), 'until is ahead')
  }
  assertNotFound(t, await call(admin, 'GET', '/admin/users/nobody/grants'), 'the grants of an unknown user')

  // Revoke one grant: that app's tokens stop, the other's work.
  const printerGrant = grants.body.find((grant: { client_id: string }) => grant.client_id === printer.clientId).grant_id as string
  const revoked = await call(admin, 'DELETE', `/admin/users/carol/grants/${encodeURIComponent(printerGrant)}`)
  t.equal(revoked.status, 204, 'grant revoked: 204')
  t.match(events.at(-1), { type: 'grant.revoked', grantId: printerGrant, clientId: printer.clientId, by: 'operator' })
  t.same(await profile(app, printerTokens), { status: 401, body: REVOKED }, 'its token is refused')
  const refreshRevoked = await refresh(app, printer, printerTokens)
  t.equal(refreshRevoked.status, 400, 'its refresh token is refused')
  t.equal(refreshRevoked.body.error, 96009)
  t.equal((await profile(app, calendarTokens)).status, 200, 'the other app\'s token works')
  t.same((await call(admin, 'GET', '/admin/users/carol/grants')).body.map((grant: { client_id: string }) => grant.client_id), [calendar.clientId], 'one grant left')
  assertNotFound(t, await call(admin, 'DELETE', `/admin/users/carol/grants/${encodeURIComponent(printerGrant)}`), 'revoking it again')
  assertNotFound(t, await call(admin, 'DELETE', '/admin/users/carol/grants/no-such-grant'), 'an unknown grant')
  assertNotFound(t, await call(admin, 'DELETE', `/admin/users/nobody/grants/${encodeURIComponent(printerGrant)}`), 'an unknown user\'s grant')

  // A new password ends the sessions; the old one is refused.
  const cookie = browser.cookie
  t.equal(await sessionStatus(app, cookie, calendar.clientId), 200, 'signed in before')
  const changed = await call(admin, 'PUT', '/admin/users/carol/password', { password: 'a brand new password' })
  t.equal(changed.status, 204, 'password changed: 204')
  t.match(events.at(-1), { type: 'user.password_changed', userId, username: 'carol' })
  t.equal(await sessionStatus(app, cookie, calendar.clientId), 302, 'the session ended')
  t.equal((await new InjectBrowser(app).signIn('carol', 'correct horse battery')).statusCode, 401, 'the old password is refused')
  const again = new InjectBrowser(app)
  t.equal((await again.signIn('carol', 'a brand new password')).statusCode, 200, 'the new one works')
  assertBadRequest(t, await call(admin, 'PUT', '/admin/users/carol/password', { password: 'short' }), 'a short password', /password/)
  assertBadRequest(t, await call(admin, 'PUT', '/admin/users/carol/password', { password: 'a brand new password', username: 'x' }), 'an unknown field')
  assertBadRequest(t, await call(admin, 'PUT', '/admin/users/carol/password', {}), 'no password')
  assertNotFound(t, await call(admin, 'PUT', '/admin/users/nobody/password', { password: 'a brand new password' }), 'an unknown user\'s password')
  t.equal(await sessionStatus(app, again.cookie, calendar.clientId), 200, 'the refused changes ended nothing')

  // Removal: the remaining grant revoked, the session ended, the consents forgotten.
  const removed = await call(admin, 'DELETE', '/admin/users/carol')
  t.equal(removed.status, 200)
  t.same(removed.body, { user_id: userId, grants_revoked: 1 })
  t.match(events.at(-1), { type: 'user.removed', userId, username: 'carol', grants: 1 })
  t.same(await profile(app, calendarTokens), { status: 401, body: REVOKED }, 'the remaining token is refused')
  t.equal((await refresh(app, calendar, calendarTokens)).status, 400, 'its refresh token is refused')
  t.equal(await sessionStatus(app, again.cookie, calendar.clientId), 302, 'the session ended')
  t.same(await store.listConsents(userId), [], 'consents forgotten')
  t.same(await store.listUserGrants(userId), [], 'grant index empty')
  assertNotFound(t, await call(admin, 'DELETE', '/admin/users/carol'), 'removing again')
  assertNotFound(t, await call(admin, 'GET', '/admin/users/carol/grants'), 'the grants of a removed user')

  t.same(events.filter((event) => !['grant.issued', 'code.exchanged', 'consent.given', 'refresh.rotated', 'signin.failed'].includes(event.type)).map((event) => event.type), [
    'user.created', 'grant.revoked', 'user.password_changed', 'user.removed'
  ], 'one event per operator action, in order, none for a refusal')
  for (const event of events) t.notOk(JSON.stringify(event).includes('correct horse') || JSON.stringify(event).includes('brand new'), `${event.type}: no password in the event`)
})

t.test('the CLI and the API are one implementation: users remove revokes alike', async (t) => {
  const redis = await startRedis(t)
  const { app, store } = await buildTestApp(t, { store: 'redis', redis })
  const admin = await adminFor(t, app)
  const printer = await addClient(store, { name: 'Photo Printer', scope: '1 3' })
  const calendar = await addClient(store, { name: 'Calendar Sync', scope: '1 4' })

  /** A user with tokens for both apps and a session; what the removal must undo. */
  async function holder (username: string) {
    const user = await addUser(store, username)
    const browser = new InjectBrowser(app)
    await browser.signIn(user.username, user.password)
    const tokens = [await grantTokens(t, app, browser, printer, '1 3'), await grantTokens(t, app, browser, calendar, '1 4')]
    for (const held of tokens) t.equal((await profile(app, held)).status, 200, `${username}: a token works (and is cached)`)
    t.equal((await store.listUserGrants(user.userId)).length, 2)
    t.equal((await store.listConsents(user.userId)).length, 2)
    return { user, tokens, cookie: browser.cookie }
  }

  /** The state after removal, the same shape for both ways. */
  async function after (held: Awaited<ReturnType<typeof holder>>) {
    const refused = await eventually(async () => {
      for (const tokens of held.tokens) if ((await profile(app, tokens)).status !== 401) return false
      return true
    }, 2000, 10)
    return {
      refused,
      api: await Promise.all(held.tokens.map(async (tokens) => await profile(app, tokens))),
      refresh: [(await refresh(app, printer, held.tokens[0]!)).body.error, (await refresh(app, calendar, held.tokens[1]!)).body.error],
      session: await sessionStatus(app, held.cookie, printer.clientId),
      grants: await store.listUserGrants(held.user.userId),
      consents: await store.listConsents(held.user.userId),
      user: await store.getUserByName(held.user.username) ?? null,
      adminGrants: (await call(admin, 'GET', `/admin/users/${held.user.username}/grants`)).status
    }
  }

  const viaApi = await holder('removed-by-api')
  const viaCli = await holder('removed-by-cli')

  const apiAnswer = await call(admin, 'DELETE', `/admin/users/${viaApi.user.username}`)
  t.same(apiAnswer, { status: 200, body: { user_id: viaApi.user.userId, grants_revoked: 2 }, headers: apiAnswer.headers }, 'API: removed, 2 grants revoked')
  const run = await runInProcess(['users', 'remove', viaCli.user.username], cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix }))
  t.equal(run.code, 0, `CLI exits 0 (${run.stderr})`)
  t.match(run.stdout, `removed user ${viaCli.user.username}`)

  const expected = {
    refused: true,
    api: [{ status: 401, body: REVOKED }, { status: 401, body: REVOKED }],
    refresh: [96009, 96009],
    session: 302,
    grants: [],
    consents: [],
    user: null,
    adminGrants: 404
  }
  t.same(await after(viaApi), expected, 'removed through the API: tokens refused, refresh refused, session ended, nothing left')
  t.same(await after(viaCli), expected, 'removed through macgate users remove: exactly the same')
})
