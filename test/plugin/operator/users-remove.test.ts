// `macgate users remove NAME` as an operator runs it (a subprocess on a Redis of the test's own)
// under a running gateway on the same Redis: the user's tokens for every app are refused at once
// (the revocations reach the gateway's token cache through the channel), their refresh tokens are
// refused, their session ends and their consents are gone; another user is untouched.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { addClient, addUser, authorizeUrl, buildTestApp, callToken, InjectBrowser, REDIRECT_URI } from '../../helpers/app.ts'
import { signedInject } from '../../helpers/gateway.ts'
import { cli, cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { eventually } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'
import { grantTokens, type Tokens } from '../../helpers/grants.ts'

const REVOKED = { result: 'error', description: 'access token invalid or expired', code: 96008 }

interface Client { clientId: string, clientSecret: string }

async function profile (app: FastifyInstance, tokens: Tokens): Promise<{ status: number, body: unknown }> {
  const response = await signedInject(app, { url: '/user/profile', token: tokens.access_token, macKey: tokens.mac_key })
  return { status: response.statusCode, body: JSON.parse(response.body) }
}

async function refresh (app: FastifyInstance, client: Client, tokens: Tokens) {
  return await callToken(app, { client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'refresh_token', refresh_token: tokens.refresh_token })
}

t.test('macgate users remove: tokens for both apps refused at the gateway, refresh refused, session ended, consents gone', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const { app, store } = await buildTestApp(t, { store: 'redis', redis })
  const printer = await addClient(store, { name: 'Photo Printer', scope: '1 3' })
  const calendar = await addClient(store, { name: 'Calendar Sync', scope: '1 4 6' })
  const user = await addUser(store, 'leaving-user')
  const stays = await addUser(store, 'staying-user')

  const browser = new InjectBrowser(app)
  t.equal((await browser.signIn(user.username, user.password)).statusCode, 200, 'signed in')
  const printerTokens = await grantTokens(t, app, browser, printer, '1 3')
  const calendarTokens = await grantTokens(t, app, browser, calendar, '1 4 6')
  const staysBrowser = new InjectBrowser(app)
  await staysBrowser.signIn(stays.username, stays.password)
  const staysTokens = await grantTokens(t, app, staysBrowser, printer, '1 3')

  // Warm the gateway's token cache: a revocation must reach it, not just the store.
  for (const tokens of [printerTokens, calendarTokens, staysTokens]) t.equal((await profile(app, tokens)).status, 200, 'works before')
  const apps = await browser.get('/oauth2/account/apps')
  t.equal(apps.statusCode, 200, 'the session reaches the apps page')
  t.equal([...apps.body.matchAll(/<li class="app" /g)].length, 2, 'two apps listed')
  t.same((await store.listConsents(user.userId)).map(({ clientId }) => clientId).sort(), [printer.clientId, calendar.clientId].sort(), 'two consents')
  t.equal((await store.listUserGrants(user.userId)).length, 2, 'two grants indexed')

  // An unknown name alongside, through the same dispatch in process (a subprocess costs seconds of
  // TypeScript loading; the one below shows the command as the shell runs it).
  const unknown = runInProcess(['users', 'remove', 'nobody-at-all'], env)
  const run = await cli(['users', 'remove', user.username], env)
  const exited = Date.now()
  t.comment(`macgate users remove ran ${run.ms} ms (mostly loading TypeScript)`)
  t.equal(run.code, 0, `exit 0 (${run.stderr})`)
  t.equal(run.stdout, `removed user ${user.username}, ended their sessions and revoked 2 grants\n`)
  t.equal(run.stderr, '')

  // The CLI published the revocations before it exited; the gateway's subscriber drops them.
  let elapsed = -1
  const refused = await eventually(async () => {
    const answers = await Promise.all([profile(app, printerTokens), profile(app, calendarTokens)])
    if (answers.some((answer) => answer.status !== 401)) return false
    elapsed = Date.now() - exited
    return true
  }, 2000, 10)
  t.ok(refused, 'both access tokens refused at the gateway')
  t.comment(`the gateway refused both ${elapsed} ms after the CLI exited`)
  t.same(await profile(app, printerTokens), { status: 401, body: REVOKED }, 'Photo Printer\'s token: 96008')
  t.same(await profile(app, calendarTokens), { status: 401, body: REVOKED }, 'Calendar Sync\'s token: 96008')
  for (const [client, tokens, name] of [[printer, printerTokens, 'Photo Printer'], [calendar, calendarTokens, 'Calendar Sync']] as const) {
    const answer = await refresh(app, client, tokens)
    t.equal(answer.status, 400, `${name}: refresh refused`)
    t.equal(answer.body.error, 96009, `${name}: 96009`)
  }

  const signedOut = await browser.get('/oauth2/account/apps')
  t.equal(signedOut.statusCode, 302, 'the session ended: the apps page sends to sign-in')
  t.match(signedOut.headers.location, /^\/oauth2\/signin\?/)
  const consent = await app.inject({ url: authorizeUrl({ client_id: printer.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1' }), headers: { cookie: browser.cookie } })
  t.equal(consent.statusCode, 302, 'the authorize endpoint too')
  t.equal((await new InjectBrowser(app).signIn(user.username, user.password)).statusCode, 401, 'cannot sign in')
  t.same(await store.listConsents(user.userId), [], 'consents gone')
  t.same(await store.listUserGrants(user.userId), [], 'grant index empty')
  t.equal(await store.getUserByName(user.username), undefined, 'the user is gone')

  t.equal((await profile(app, staysTokens)).status, 200, 'the other user\'s token still works')
  t.equal((await staysBrowser.get('/oauth2/account/apps')).statusCode, 200, 'the other user\'s session still works')
  t.equal((await store.listConsents(stays.userId)).length, 1, 'the other user\'s consent kept')

  const nobody = await unknown
  t.equal(nobody.code, 2, 'an unknown user: exit 2')
  t.match(nobody.stderr, /^macgate: no user nobody-at-all\n/)
  t.equal(nobody.stdout, '')
})
