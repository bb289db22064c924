// The device grant's verification page in real Chromium, against `macgate start`'s demo (embedded
// store): the demo device client of the banner, `macgate login` showing a code, the user opening
// verification_uri_complete, signing in, confirming the prefilled code, seeing the app and its
// permissions with the warning, and allowing: login writes its token. Then a code typed by hand
// (lower case, no dash) and denied: the device is told access_denied.
import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import t from 'tap'
import { failure, main } from '../../../gateway/commands/main.ts'
import { checkLayout, launch, signIn, skipWithoutChromium } from '../../helpers/browser.ts'
import { capture } from '../../helpers/capture.ts'
import { startDemoServer } from '../../helpers/demo-server.ts'

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

t.test('the verification page in Chromium: sign in, the code, allow and deny', { skip: skipWithoutChromium }, async (t) => {
  const demo = await startDemoServer(t, /demo user +username=demo +password=(\S+)[\s\S]*demo device +macgate login --issuer (\S+) --client-id (\d+)/)
  const { banner } = demo
  if (banner === undefined) throw new Error(`no banner: ${demo.output.stdout}${demo.output.stderr}`)
  const [, password, issuer, clientId] = banner as unknown as [string, string, string, string]
  t.equal(issuer, demo.origin, 'the demo\'s issuer is its origin')

  // macgate login, as the banner says, in this process; its output is watched for the code.
  const home = await mkdtemp(join(tmpdir(), 'macgate-device-browser-'))
  const streams = capture()
  let exitCode = 0
  const login = main(['login', '--issuer', issuer, '--client-id', clientId!], { env: { XDG_CONFIG_HOME: home }, stdout: streams.stdout, stderr: streams.stderr, stdin: Readable.from(['']) })
    .catch((error: unknown) => { exitCode = failure(error).exitCode; streams.out.stderr += failure(error).stderr })
  let complete: string | undefined
  for (let i = 0; i < 400 && complete === undefined; i++) {
    complete = /\(or open (\S+)\)/.exec(streams.out.stdout)?.[1]
    if (complete === undefined) await new Promise((resolve) => setTimeout(resolve, 25))
  }
  t.ok(complete, 'login shows verification_uri_complete')
  const userCode = new URL(complete!).searchParams.get('user_code')!

  const browser = await launch(t)
  const page = await browser.newPage()
  page.setDefaultTimeout(15_000)
  const consoleErrors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()) })

  await page.goto(complete!)
  t.equal(new URL(page.url()).pathname, '/oauth2/signin', 'signed out: the sign-in first')
  await signIn(page, 'demo', password!, (url) => url.pathname === '/oauth2/device')
  t.equal(await page.title(), 'Connect a device')
  t.equal(await page.inputValue('#user_code'), userCode, 'the code prefilled, to confirm')
  await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')])
  t.equal(await page.textContent('h1'), 'Authorize macgate demo device')
  t.equal(await page.textContent('#user-code'), userCode)
  t.equal(await page.locator('#permissions li').count(), 4, 'the permissions asked: 1 3 4 6')
  t.match(await page.textContent('#warning'), /Only allow this if the code is shown on a device you are using right now/)
  const shots = await checkLayout(t, page, { name: 'device-confirm', dir: t.testdir(), primary: 'button[value=allow]' })
  t.ok(shots.length > 0)
  await Promise.all([page.waitForLoadState(), page.click('button[name=decision][value=allow]')])
  t.equal(await page.textContent('#outcome'), 'Device connected')

  await login
  t.equal(exitCode, 0, streams.out.stderr)
  const saved = JSON.parse(await readFile(join(home, 'macgate', 'token.json'), 'utf8'))
  t.match(saved, { token_type: 'mac', scope: '1 3 4 6', client_id: clientId })

  // A second device; the user types its code by hand, in lower case without the dash, and denies.
  const started = await (await fetch(`${issuer}/oauth2/device_authorization`, { method: 'POST', body: new URLSearchParams({ client_id: clientId! }) })).json() as { device_code: string, user_code: string }
  await page.goto(`${issuer}/oauth2/device`)
  t.equal(await page.inputValue('#user_code'), '', 'nothing prefilled without the link')
  await page.fill('#user_code', 'bbbb-bbbb')
  await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')])
  t.match(await page.textContent('.error'), /not valid/, 'a wrong code is refused on the page')
  await page.fill('#user_code', started.user_code.replace('-', '').toLowerCase())
  await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')])
  t.equal(await page.textContent('#user-code'), started.user_code, 'the typed code, as the device shows it')
  await Promise.all([page.waitForLoadState(), page.click('button[name=decision][value=deny]')])
  t.equal(await page.textContent('#outcome'), 'Access denied')
  const polled = await fetch(`${issuer}/oauth2/rfc/token`, { method: 'POST', body: new URLSearchParams({ grant_type: DEVICE_GRANT, client_id: clientId!, device_code: started.device_code }) })
  t.match(await polled.json(), { error: 'access_denied' })
  t.same(consoleErrors, ['Failed to load resource: the server responded with a status of 400 (Bad Request)'], 'no console error but the wrong code\'s 400')
})
