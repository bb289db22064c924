// What `npm pack` ships: the build output users need (dist/plugin, dist/gateway), the README, and
// whatever `bin`, `exports` and `types` point at; never the tests, CI scripts, bench results, the
// compiled bench, the TypeScript sources or their source maps, nor anything that looks like a
// secret. Scripts are skipped (`--ignore-scripts`): `prepare` would run the whole build.
// `engines` is what the production dependencies allow; macgate/gateway does not load autocannon.
// publint and attw check the packed package itself: `npm run check:package`, run by CI.
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import semver from 'semver'
import t from 'tap'
import { ROOT, spawnSource } from './helpers/source.ts'

t.setTimeout(120_000)

interface Entry { types: string, default: string }

interface Manifest {
  files: string[]
  bin: Record<string, string>
  main: string
  types: string
  typesVersions: Record<string, Record<string, string[]>>
  exports: Record<string, Entry & { browser?: Entry }>
  engines: { node: string }
}

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest
const strip = (path: string): string => path.replace(/^\.\//, '')

/** Every file a user's import, `types` lookup or `bin` reaches. */
const targets = [
  ...Object.values(manifest.bin),
  manifest.main,
  manifest.types,
  ...Object.values(manifest.typesVersions['*'] ?? {}).flat(),
  ...Object.values(manifest.exports).flatMap(({ types, default: code, browser }) => [types, code, ...(browser === undefined ? [] : [browser.types, browser.default])])
].map(strip)

t.test('package.json: types beside every entry point, publishable', async (t) => {
  for (const [entry, { browser, ...conditions }] of Object.entries(manifest.exports)) {
    // A browser build comes first (conditions are read in order), with types and code of its own.
    t.same(Object.keys(manifest.exports[entry]!), [...(browser === undefined ? [] : ['browser']), 'types', 'default'], `${entry}: types first, as TypeScript reads conditions in order`)
    const pairs: Array<[string, Entry]> = [['', conditions], ...(browser === undefined ? [] : [[' (browser)', browser] as [string, Entry]])]
    for (const [name, pair] of pairs) {
      t.same(Object.keys(pair), ['types', 'default'], `${entry}${name}: types first`)
      t.equal(pair.types, pair.default.replace(/\.js$/, '.d.ts'), `${entry}${name}: the declarations beside the code`)
    }
  }
  t.same(manifest.exports['./client']!.browser, manifest.exports['./client/browser'], 'browsers get macgate/client/browser as macgate/client')
  t.equal(manifest.types, manifest.exports['.']!.types, 'the top-level types are the main entry\'s')
  t.equal(manifest.main, manifest.exports['.']!.default)
  t.same(manifest.typesVersions['*'], {
    client: [strip(manifest.exports['./client']!.types)],
    'client/browser': [strip(manifest.exports['./client/browser']!.types)],
    gateway: [strip(manifest.exports['./gateway']!.types)]
  }, 'the subpaths for node10 resolution')
  const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')) as { compilerOptions: { declaration?: boolean, outDir: string } }
  t.equal(tsconfig.compilerOptions.declaration, true, 'the build emits the declarations the types point at')
  t.notOk('private' in manifest, 'not private: npm publish is allowed')
})

t.test('engines: what every production dependency allows, and the LTS lines from 22.15 on', async (t) => {
  const range = manifest.engines.node
  t.equal(range, '>=22.15.0', 'Node 22 from 22.15 (the OpenTelemetry SDK\'s least; require of ES modules from 22.12), and every later line')
  for (const version of ['22.15.0', '24.0.0']) t.ok(semver.satisfies(version, range), `Node ${version} is in the range`)
  // Every package `npm install macgate` brings, by its own engines field.
  const { stdout } = await promisify(execFile)('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 })
  const wider: string[] = []
  let declared = 0
  for (const directory of stdout.trim().split('\n').slice(1)) {
    const { name, version, engines } = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { name: string, version: string, engines?: { node?: string } }
    if (engines?.node === undefined) continue
    declared++
    if (!semver.subset(range, engines.node)) wider.push(`${name}@${version} needs node ${engines.node}`)
  }
  t.ok(declared >= 10, `${declared} production dependencies declare the Node versions they run on`)
  t.same(wider, [], `${range} is within every production dependency's engines`)
  if (!semver.satisfies(process.versions.node, range)) t.comment(`this Node (${process.versions.node}) is outside the supported range: tested here, not supported`)
})

t.test('npm pack ships only what users need', async (t) => {
  const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 })
  const [pack] = JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>
  const files = pack!.files.map(({ path }) => path)
  const stray = files.filter((path) => !/^dist\/(plugin|gateway)\//.test(path) && !['package.json', 'README.md'].includes(path))
  t.same(stray, [], 'nothing outside dist/plugin, dist/gateway, package.json and README.md')
  const secrets = /(^|\/)\.env|\.(pem|key|p12|pfx)$|(^|\/)\.npmrc$/
  for (const unwanted of [/^test\//, /^\.ci\//, /^bench\//, /^dist\/bench\//, /^dist\/test\//, /^\.taprc$/, /^tsconfig/, /\.ts$(?<!\.d\.ts$)/, /\.map$/, secrets]) {
    t.same(files.filter((path) => unwanted.test(path)), [], `nothing matching ${unwanted}`)
  }
  t.ok(files.includes('README.md'), 'the README')

  // Every target is covered by a `files` entry; once built (`npm run build`), it is in the pack.
  for (const target of targets) {
    t.ok(manifest.files.some((entry) => target === entry || target.startsWith(`${entry}/`)), `${target} is under a files entry`)
    if (existsSync(join(ROOT, target))) t.ok(files.includes(target), `${target} is packed`)
    else t.comment(`${target} is not built here: run npm run build to check it is packed`)
  }
})

t.test('importing macgate/gateway does not load autocannon: only a load run does', async (t) => {
  const child = spawnSource('test/fixtures/gateway-import.ts', [], { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  t.equal(code, 0, 'the probe ran')
  const probe = JSON.parse(output) as { exports: number, afterImport: boolean, afterAutocannon: boolean }
  t.ok(probe.exports > 0, 'macgate/gateway loaded, with its exports')
  t.equal(probe.afterImport, false, 'autocannon is not loaded by the import')
  t.equal(probe.afterAutocannon, true, 'the probe sees autocannon once it is loaded')
})
