// `macgate login` against a running gateway (real HTTP, real Redis): it shows the code, a user
// approves it on the verification page, and it writes the token answer (mode 0600) where
// `macgate load --credentials` reads it; `--refresh` renews it; the refusals an operator meets.
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import t from 'tap'
import { failure, main } from '../../../gateway/commands/main.ts'
import { removeClient } from '../../../plugin/operator/clients.ts'
import { addUser, InjectBrowser } from '../../helpers/app.ts'
import { capture } from '../../helpers/capture.ts'
import { addDeviceClient, decideDevice } from '../../helpers/device.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { liveGateway } from '../../helpers/live.ts'
import { freePort, startRedis } from '../../helpers/redis.ts'

const redis = await startRedis(t)
const port = await freePort()
const issuer = `http://127.0.0.1:${port}`
// Polls every second, so that the test waits little; the gateway listens on the issuer's port.
const gateway = await liveGateway(t, redis, randomBytes(32).toString('base64url'), { issuer, devicePollInterval: 1 }, port)
const plain = await liveGateway(t, redis, randomBytes(32).toString('base64url'))
// Codes that expire after a second, on the same Redis under another public name.
const shortPort = await freePort()
const shortIssuer = `http://127.0.0.1:${shortPort}`
await liveGateway(t, redis, randomBytes(32).toString('base64url'), { issuer: shortIssuer, devicePollInterval: 1, deviceCodeTtl: 1 }, shortPort)
const home = await mkdtemp(join(tmpdir(), 'macgate-login-'))

/**
 * Runs `macgate login ARGS` in process; once it shows a code, `onCode` acts on it (a user deciding),
 * and the run's outcome follows.
 */
async function loginWhile (args: string[], env: NodeJS.ProcessEnv, onCode: (userCode: string) => Promise<void>, { isTTY = false } = {}) {
  const streams = capture(isTTY)
  let code = 0
  const running = main(['login', ...args], { env, stdout: streams.stdout, stderr: streams.stderr, stdin: Readable.from(['']) })
    .catch((error: unknown) => {
      const failed = failure(error)
      streams.out.stderr += failed.stderr
      code = failed.exitCode
    })
  let userCode: string | undefined
  for (let i = 0; i < 200 && userCode === undefined; i++) {
    userCode = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(streams.out.stdout)?.[1]
    if (userCode === undefined) await new Promise((resolve) => setTimeout(resolve, 25))
  }
  if (userCode !== undefined) await onCode(userCode)
  await running
  return { code, stdout: streams.out.stdout, stderr: streams.out.stderr, userCode }
}

t.test('login, approved: the token file, then macgate load with it, then --refresh', async (t) => {
  const { clientId } = await addDeviceClient(gateway.store)
  const user = await addUser(gateway.store)
  const env = { XDG_CONFIG_HOME: home, HOME: '/nonexistent' }
  const run = await loginWhile(['--issuer', issuer, '--client-id', clientId, '--scope', '1 3'], env, async (userCode) => {
    await decideDevice(new InjectBrowser(gateway.app), user, userCode, 'allow')
  })
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, `To sign in, open ${issuer}/oauth2/device\nand enter the code ${run.userCode}\n(or open ${issuer}/oauth2/device?user_code=${run.userCode})\n`)
  t.notMatch(run.stdout, /█|▀|▄/, 'no QR code into a pipe')
  const file = join(home, 'macgate', 'token.json')
  t.match(run.stdout, `the token is in ${file}`)
  t.equal((await stat(file)).mode & 0o777, 0o600, 'only its owner can read it')
  const saved = JSON.parse(await readFile(file, 'utf8'))
  t.match(saved, { token_type: 'mac', scope: '1 3', issuer, client_id: clientId })

  const load = await runInProcess(['load', '--url', gateway.origin, '--path', '/user/openidV2', '--credentials', file, '--amount', '5', '--connections', '1', '--json'], {})
  t.equal(load.code, 0, load.stderr)
  t.match(JSON.parse(load.stdout), { statuses: { 200: 5 } }, 'every signed request answered 200')

  const refreshed = await runInProcess(['login', '--refresh'], env)
  t.equal(refreshed.code, 0, refreshed.stderr)
  const renewed = JSON.parse(await readFile(file, 'utf8'))
  t.not(renewed.access_token, saved.access_token, 'a new access token')
  t.match(renewed, { issuer, client_id: clientId, scope: '1 3' })
  t.equal((await stat(file)).mode & 0o777, 0o600)
  const again = await runInProcess(['load', '--url', gateway.origin, '--path', '/user/openidV2', '--credentials', file, '--amount', '2', '--connections', '1', '--json'], {})
  t.match(JSON.parse(again.stdout), { statuses: { 200: 2 } })
})

t.test('login with a confidential client, denied; a QR code on a terminal; --out', async (t) => {
  const { clientId, clientSecret } = await addDeviceClient(gateway.store, { public: false })
  const secretFile = join(home, 'secret')
  await writeFile(secretFile, `${clientSecret}\n`)
  const out = join(home, 'denied.json')
  const run = await loginWhile(['--issuer', `${issuer}/`, '--client-id', clientId, '--client-secret-file', secretFile, '--out', out], {}, async (userCode) => {
    await decideDevice(new InjectBrowser(gateway.app), await addUser(gateway.store), userCode, 'deny')
  }, { isTTY: true })
  t.equal(run.code, 2)
  t.equal(run.stderr, 'macgate: the sign-in was denied in the browser\n')
  t.match(run.stdout, /[▀▄█]/, 'a QR code of the link, on a terminal')
  await t.rejects(stat(out), { code: 'ENOENT' }, 'no file written')

  const wrong = await runInProcess(['login', '--issuer', issuer, '--client-id', clientId], { MACGATE_CLIENT_SECRET: 'wrong' })
  t.match(wrong, { code: 2, stderr: /^macgate: the device authorization refused: invalid_client/ })
})

t.test('login while polling: a code expired, the client removed', async (t) => {
  const { clientId } = await addDeviceClient(gateway.store)
  const expired = await loginWhile(['--issuer', shortIssuer, '--client-id', clientId, '--out', join(home, 'expired.json')], {}, async () => {})
  t.equal(expired.stderr, 'macgate: the code expired before it was approved: run macgate login again\n')
  t.equal(expired.code, 2)

  const removed = await loginWhile(['--issuer', issuer, '--client-id', clientId, '--out', join(home, 'removed.json')], {}, async () => {
    await removeClient(gateway.store, clientId)
  })
  t.match(removed, { code: 2, stderr: /^macgate: the token endpoint refused: invalid_request/ }, 'a public client that no longer exists')
})

t.test('login refusals', async (t) => {
  const { clientId } = await addDeviceClient(gateway.store)
  t.match(await runInProcess(['login', '--client-id', clientId], {}), { code: 2, stderr: /login needs --issuer URL/ })
  t.match(await runInProcess(['login', '--issuer', issuer], {}), { code: 2, stderr: /login needs --client-id ID/ })
  t.match(await runInProcess(['login', '--issuer', issuer, '--client-id', clientId, '--client-secret', 'x'], {}), { code: 2, stderr: /never from an argument/ })
  t.match(await runInProcess(['login', '--issuer', plain.origin, '--client-id', clientId], {}), { code: 2, stderr: /does not offer the device grant/ })
  const closed = await freePort()
  t.match(await runInProcess(['login', '--issuer', `http://127.0.0.1:${closed}`, '--client-id', clientId], {}), { code: 2, stderr: /cannot reach .*ECONNREFUSED/ })
  t.match(await runInProcess(['login', '--refresh', '--out', join(home, 'none.json')], {}), { code: 2, stderr: /cannot read the token file .*ENOENT.*run macgate login first/ })
  t.match(await runInProcess(['login', '--refresh', '--issuer', issuer], {}), { code: 2, stderr: /--refresh takes the issuer/ })
  const partial = join(home, 'partial.json')
  await writeFile(partial, '{"access_token":"a","mac_key":"b"}\n')
  t.match(await runInProcess(['login', '--refresh', '--out', partial], {}), { code: 2, stderr: /has no refresh_token, issuer or client_id/ })
  await writeFile(partial, JSON.stringify({ access_token: 'a', mac_key: 'b', refresh_token: 'forged', issuer, client_id: clientId }))
  t.match(await runInProcess(['login', '--refresh', '--out', partial], {}), { code: 2, stderr: /the refresh refused: invalid_grant/ })
  t.match(await runInProcess(['login', '--issuer', issuer, '--client-id', clientId, '--client-secret-file', join(home, 'nope')], {}), { code: 2, stderr: /cannot read the client secret file .*ENOENT/ })
  t.match(await runInProcess(['login', '--issuer', issuer, '--client-id', clientId, '--scope', '99'], {}), { code: 2, stderr: /refused: invalid_scope/ })
})
