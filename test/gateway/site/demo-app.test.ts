// The demo app's server over HTTP (its flows run in Chromium, apps-without-server.test.ts): what it
// serves before and after it is configured, the page's CSP, the browser entry's modules and nothing
// else of the package, from the sources and from a built layout alike.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { transform } from 'esbuild'
import t from 'tap'
import { startDemoApp } from '../../../gateway/site/demo/app-server.ts'
import { appPolicy } from '../../../gateway/site/demo/app-page.ts'
import { BROWSER_CLIENT_MODULES, loadBrowserClient } from '../../../gateway/site/demo/client-modules.ts'
import { cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { freePort } from '../../helpers/redis.ts'
import { ROOT } from '../../helpers/source.ts'

t.test('the demo app serves its page once configured, its script and the browser entry\'s modules', async (t) => {
  const demoApp = await startDemoApp('127.0.0.1')
  t.teardown(demoApp.close)
  t.match(demoApp.origin, /^http:\/\/127\.0\.0\.1:[0-9]+$/)
  const get = async (path: string) => await fetch(`${demoApp.origin}${path}`)

  const early = await get('/')
  t.equal(early.status, 503, 'not configured yet')
  t.equal(early.headers.get('content-security-policy'), "frame-ancestors 'none'", 'the usual headers on every answer')

  demoApp.configure({ gateway: 'http://127.0.0.1:9', redirectUri: `${demoApp.origin}/`, scope: '1 3', clients: { code: '11', token: '22' } })
  const page = await get('/')
  t.equal(page.status, 200)
  const html = await page.text()
  t.match(html, '<script type="application/json" id="config">{"gateway":"http://127.0.0.1:9","redirectUri":"')
  t.match(page.headers.get('content-security-policy'), /^default-src 'none'; script-src 'self'; style-src 'sha256-[A-Za-z0-9+/]+=*' 'sha256-[A-Za-z0-9+/]+=*'; img-src data:; connect-src http:\/\/127\.0\.0\.1:9; /)
  t.same([page.headers.get('x-frame-options'), page.headers.get('referrer-policy'), page.headers.get('x-content-type-options'), page.headers.get('cache-control')], ['DENY', 'no-referrer', 'nosniff', 'no-store'])

  const script = await get('/app.js')
  t.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8')
  t.match(await script.text(), /from '\/lib\/client\/browser\.js'/)
  for (const name of BROWSER_CLIENT_MODULES) {
    const module = await get(`/lib/${name}.js`)
    t.equal(module.status, 200, `${name}.js served`)
    t.notMatch(await module.text(), /: (string|number|boolean)\b|\binterface /, `${name}.js stripped of its types`)
  }
  for (const path of ['/lib/mac/signature.js', '/lib/client/index.js', '/lib/client/browser.ts', '/lib/../package.json', '/lib/%2e%2e/%2e%2e/package.json', '/package.json']) {
    t.equal((await get(path)).status, 404, `${path}: nothing else`)
  }
  t.equal((await get('/favicon.ico')).status, 204)
})

t.test('a configuration with a "</script>" in it stays inside its element', async (t) => {
  const demoApp = await startDemoApp('127.0.0.1')
  t.teardown(demoApp.close)
  demoApp.configure({ gateway: 'http://127.0.0.1:9', redirectUri: `${demoApp.origin}/`, scope: '</script><script>alert(1)</script>', clients: { code: '1', token: '2' } })
  const html = await (await fetch(`${demoApp.origin}/`)).text()
  t.notMatch(html, '</script><script>alert', 'escaped')
  t.match(html, '\\u003c/script>\\u003cscript>')
})

t.test('the page\'s CSP names its style elements by their hashes', async (t) => {
  const hash = (style: string) => `'sha256-${createHash('sha256').update(style).digest('base64')}'`
  t.match(appPolicy('<style>a{}</style><p><style>b{}</style>', 'https://id.example'), `; style-src ${hash('a{}')} ${hash('b{}')}; `)
  t.match(appPolicy('<p>no style</p>', 'https://id.example'), "; style-src 'none'; ", 'none: no style allowed')
})

t.test('built, the compiled modules go out as they are', async (t) => {
  // A dist-like layout: gateway/demo beside plugin/client and plugin/mac, holding .js files.
  const dir = await mkdtemp(join(tmpdir(), 'macgate-built-'))
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const expected = new Map<string, string>()
  for (const name of BROWSER_CLIENT_MODULES) {
    const code = `// built\n${(await transform(await readFile(join(ROOT, 'plugin', `${name}.ts`), 'utf8'), { loader: 'ts', format: 'esm' })).code}`
    await mkdir(dirname(join(dir, 'plugin', `${name}.js`)), { recursive: true })
    await writeFile(join(dir, 'plugin', `${name}.js`), code)
    expected.set(`${name}.js`, code)
  }
  t.same(await loadBrowserClient(pathToFileURL(join(dir, 'gateway/site/demo/client-modules.js')).href), expected)
})

// The demo app listens before the gateway is built: a start that fails after it must close it too,
// or the process would stay up on its socket after the error.
t.test('macgate start closes the demo app when the start fails', async (t) => {
  const listening = () => process.getActiveResourcesInfo().filter((resource) => resource === 'TCPServerWrap').length
  // A closed server's handle goes a few turns after its close resolves: wait for it (5 s at most).
  const settled = async (count: number) => {
    for (let turn = 0; turn < 500 && listening() !== count; turn++) await new Promise((resolve) => setTimeout(resolve, 10))
    return listening()
  }
  const before = listening()
  const badLevel = await runInProcess(['start'], cliEnv({ PORT: String(await freePort()), LOG_LEVEL: 'nonsense' }))
  t.match(badLevel, { code: 1, stderr: /level:nonsense/ }, 'the gateway cannot be built')
  t.equal(await settled(before), before, 'no server left listening')

  const taken = createServer().listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.teardown(() => { taken.close() })
  const port = String((taken.address() as { port: number }).port)
  const busy = await runInProcess(['start'], cliEnv({ PORT: port, ADMIN_PORT: 'off' }))
  t.match(busy, { code: 2, stderr: new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: EADDRINUSE`) }, 'the gateway cannot listen')
  t.equal(await settled(before + 1), before + 1, 'no server left listening but the test\'s own')
})
