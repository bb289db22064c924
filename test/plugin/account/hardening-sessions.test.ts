// Server-side sessions: the cookie only names a session the store holds, so that signing out,
// changing the password or removing the user ends it, on every gateway instance sharing the store,
// also when done with `macgate users passwd` / `users remove` (run in process here, through the
// CLI's dispatch and its own connection to the store, as another process would have).
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { changePassword, removeUser } from '../../../plugin/index.ts'
import { addClient, addUser, authorizeUrl, buildTestApp, InjectBrowser, REDIRECT_URI } from '../../helpers/app.ts'
import { startRedis } from '../../helpers/redis.ts'
import { cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'

/** A client's authorization request: the consent page for a session, sign-in without one. */
function consentUrl (clientId: string): string {
  return authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1' })
}

/** A browser signed in as `user`, and a copy of its session cookie. */
async function signedInCookie (app: FastifyInstance, user: { username: string, password: string }): Promise<{ browser: InjectBrowser, cookie: string }> {
  const browser = new InjectBrowser(app)
  const response = await browser.signIn(user.username, user.password)
  if (response.statusCode !== 200) throw new Error(`sign-in failed: ${response.statusCode}`)
  return { browser, cookie: browser.cookie }
}

/** Asserts what `cookie` gets at the authorize endpoint: the consent page as `username`, or sign-in. */
async function assertSession (t: Test, app: FastifyInstance, cookie: string, clientId: string, username: string | undefined, label: string): Promise<void> {
  const response = await app.inject({ url: consentUrl(clientId), headers: { cookie } })
  if (username !== undefined) {
    t.equal(response.statusCode, 200, `${label}: signed in`)
    t.ok(response.body.includes(`<strong id="account">${username}</strong>`), `${label}: as ${username}`)
  } else {
    t.equal(response.statusCode, 302, `${label}: not signed in`)
    t.match(response.headers.location, /^\/oauth2\/signin\?/, `${label}: sent to sign-in`)
  }
}

t.test('signing out ends the session, not just the cookie', async (t) => {
  const { app, store } = await buildTestApp(t)
  const { clientId } = await addClient(store)
  const user = await addUser(store)
  const { browser, cookie } = await signedInCookie(app, user)
  const other = await signedInCookie(app, user)
  await assertSession(t, app, cookie, clientId, user.username, 'before sign-out')
  t.equal((await browser.get(consentUrl(clientId))).statusCode, 200, 'the consent page gives a CSRF token')
  const signedOut = await browser.post('/oauth2/signout', {})
  t.equal(signedOut.statusCode, 303)
  await assertSession(t, app, cookie, clientId, undefined, 'the copied cookie after sign-out')
  await assertSession(t, app, other.cookie, clientId, user.username, 'another session of the same user')
})

t.test('two instances on Redis: a password change or removal ends the session on both', async (t) => {
  const redis = await startRedis(t)
  const secret = randomBytes(32).toString('base64url')
  const a = await buildTestApp(t, { store: 'redis', redis, secret })
  const b = await buildTestApp(t, { store: 'redis', redis, secret })
  const { clientId } = await addClient(a.store)
  const user = await addUser(a.store)

  const first = await signedInCookie(a.app, user)
  await assertSession(t, a.app, first.cookie, clientId, user.username, 'A')
  await assertSession(t, b.app, first.cookie, clientId, user.username, 'B')
  const password = 'a brand new password'
  await changePassword(a.store, user.username, password)
  await assertSession(t, a.app, first.cookie, clientId, undefined, 'A after changePassword')
  await assertSession(t, b.app, first.cookie, clientId, undefined, 'B after changePassword')
  t.equal((await new InjectBrowser(b.app).signIn(user.username, user.password)).statusCode, 401, 'the old password is refused')

  const second = await signedInCookie(b.app, { username: user.username, password })
  await assertSession(t, a.app, second.cookie, clientId, user.username, 'A, signed in again')
  await removeUser(b.store, user.username)
  await assertSession(t, a.app, second.cookie, clientId, undefined, 'A after removeUser')
  await assertSession(t, b.app, second.cookie, clientId, undefined, 'B after removeUser')
  await t.rejects(removeUser(a.store, user.username), { name: 'NoSuchRecordError', message: `no user ${user.username}` })
  await t.rejects(changePassword(a.store, user.username, password), { name: 'NoSuchRecordError', message: `no user ${user.username}` })
})

t.test('macgate users passwd and users remove end a running gateway\'s sessions', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const { app, store } = await buildTestApp(t, { store: 'redis', redis })
  const { clientId } = await addClient(store)
  const user = await addUser(store)
  const before = await signedInCookie(app, user)
  await assertSession(t, app, before.cookie, clientId, user.username, 'before passwd')

  const password = 'another long password'
  const [passwd, nobody] = await Promise.all([
    runInProcess(['users', 'passwd', '--username', user.username, '--password-stdin'], env, { input: `${password}\n` }),
    runInProcess(['users', 'remove', 'nobody'], env)
  ])
  t.equal(passwd.code, 0, `passwd exits 0 (${passwd.stderr})`)
  t.equal(passwd.stdout, `changed the password of ${user.username} and ended their sessions\n`)
  await assertSession(t, app, before.cookie, clientId, undefined, 'after users passwd')
  t.equal(nobody.code, 2, 'remove nobody: exit 2')
  t.equal(nobody.stdout, '')
  t.match(nobody.stderr, /^macgate: no user nobody\n/)

  const after = await signedInCookie(app, { username: user.username, password })
  await assertSession(t, app, after.cookie, clientId, user.username, 'signed in with the new password')
  const removed = await runInProcess(['users', 'remove', user.username], env)
  t.equal(removed.code, 0, `remove exits 0 (${removed.stderr})`)
  t.match(removed.stdout, new RegExp(`^removed user ${user.username}, ended their sessions and revoked \\d+ grants?\n$`))
  await assertSession(t, app, after.cookie, clientId, undefined, 'after users remove')
  t.equal(await store.getUserByName(user.username), undefined, 'the user is gone')
})
