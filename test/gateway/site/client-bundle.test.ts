// The browser entry of macgate/client through a real bundler (esbuild, platform browser): it bundles
// with no Node built-in, and the package's exports hand it to browser builds and the Node entry to
// Node builds. The Node entry, which signs on node:crypto, cannot bundle for a browser.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { build, type BuildOptions } from 'esbuild'
import t from 'tap'
import { ROOT } from '../../helpers/source.ts'
import { BROWSER_CLIENT_MODULES } from '../../../gateway/site/demo/client-modules.ts'

const forBrowser: BuildOptions = { bundle: true, platform: 'browser', format: 'esm', write: false, metafile: true, logLevel: 'silent' }

t.test('the browser entry bundles without a Node built-in', async (t) => {
  const result = await build({ ...forBrowser, absWorkingDir: ROOT, entryPoints: ['plugin/client/browser.ts'] })
  const inputs = Object.keys(result.metafile!.inputs)
  t.same(inputs.filter((input) => !/^plugin\/(client|mac)\/[a-z0-9-]+\.ts$/.test(input)), [], 'only the project\'s own client and signing-string files')
  t.same(inputs.sort(), BROWSER_CLIENT_MODULES.map((name) => `plugin/${name}.ts`).sort(), 'the modules the demo serves are exactly the entry\'s')
  const code = result.outputFiles![0]!.text
  for (const nodeOnly of ['node:', 'require(', 'Buffer', 'process.']) t.notOk(code.includes(nodeOnly), `no ${nodeOnly} in the bundle`)
  for (const name of ['beginAuthorization', 'completeAuthorization', 'refreshTokens', 'revokeToken', 'createSignedFetch', 'signRequestAsync']) {
    t.match(code, new RegExp(`\\b${name}\\b`), `exports ${name}`)
  }
})

t.test('the Node entry cannot bundle for a browser (what the check above guards)', async (t) => {
  await t.rejects(build({ ...forBrowser, entryPoints: [join(ROOT, 'plugin/client/index.ts')] }), { message: /node:crypto/ })
})

t.test('the package exports: browsers get the browser entry, Node the Node one', async (t) => {
  // A copy of the package.json with one-line stand-ins at the files it names (no build needed),
  // outside the project: inside it, 'macgate/...' would resolve to the project itself.
  const dir = await mkdtemp(join(tmpdir(), 'macgate-exports-'))
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const manifest = await readFile(join(ROOT, 'package.json'), 'utf8')
  const packageDir = join(dir, 'node_modules/macgate')
  await mkdir(join(packageDir, 'dist/plugin/client'), { recursive: true })
  await writeFile(join(packageDir, 'package.json'), manifest)
  for (const [file, name] of [['browser.js', 'browser'], ['index.js', 'node']] as const) {
    await mkdir(dirname(join(packageDir, 'dist/plugin/client', file)), { recursive: true })
    await writeFile(join(packageDir, 'dist/plugin/client', file), `export const entry = '${name}'\n`)
  }
  await writeFile(join(dir, 'app.js'), 'import { entry } from \'macgate/client\'\nimport { entry as named } from \'macgate/client/browser\'\nconsole.log(entry, named)\n')
  // Which of the package's files each build reached.
  const filesOf = async (platform: 'browser' | 'node') => {
    const result = await build({ ...forBrowser, platform, absWorkingDir: dir, entryPoints: ['app.js'] })
    return Object.keys(result.metafile!.inputs).filter((input) => input.startsWith('node_modules/')).map((input) => input.replace('node_modules/macgate/dist/plugin/client/', '')).sort()
  }
  t.same(await filesOf('browser'), ['browser.js'], 'a browser build: the browser entry, by the condition and by name')
  t.same(await filesOf('node'), ['browser.js', 'index.js'], 'a Node build: the Node entry unless the browser one is named')
})
