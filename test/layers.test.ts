// Layers, bottom to top: plugin/core < plugin/observe < plugin/store < plugin/config < plugin/mac < plugin/client,
// plugin/account < plugin/oauth (with subfolders) < files directly in plugin/ < gateway < bench. Imports may only go
// down or sideways (client and account never import each other); gateway and bench reach the plugin
// only through its package entries. Check with: npx tap test/layers.test.ts
import { readdirSync, readFileSync } from 'node:fs'
import { posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const SOURCE_DIRS = ['plugin', 'gateway', 'bench']

// Rank of each plugin folder; '' is the files directly in plugin/.
const RANKS = new Map<string, number>([
  ['core', 0],
  ['observe', 1],
  ['store', 2],
  ['config', 3],
  ['mac', 4],
  ['client', 5],
  ['account', 5],
  ['oauth', 6],
  ['', 7]
])

// What package.json exports: the only plugin and gateway files the layers above may import.
const PLUGIN_ENTRIES = new Set(['plugin/index.ts', 'plugin/client/index.ts'])
const GATEWAY_ENTRY = 'gateway/server.ts'

type Place =
  | { zone: 'plugin', folder: string, rank: number | undefined }
  | { zone: 'gateway' | 'bench' }
  | { zone: 'outside' }

// Statements are anchored at a line start so that text in strings and comments mostly stays out;
// the clause before `from` may only hold names, commas, `*` and `{ ... }`, so it spans lines.
const FROM_IMPORT = /^[ \t]*(?:import|export)\s(?:[\w$\s,*]|\{[^}]*\})*?\bfrom\s*(['"])([^'"\n]+)\1/gm
const BARE_IMPORT = /^[ \t]*import\s*(['"])([^'"\n]+)\1/gm
const DYNAMIC_IMPORT = /\bimport\s*\(\s*(['"])([^'"\n]+)\1/g

function specifiers (source: string): string[] {
  const found: string[] = []
  for (const pattern of [FROM_IMPORT, BARE_IMPORT, DYNAMIC_IMPORT]) {
    for (const match of source.matchAll(pattern)) {
      if (match[2] !== undefined) found.push(match[2])
    }
  }
  return found
}

// A relative specifier as a repo-relative path to the .ts source (NodeNext imports name the .js).
function resolve (from: string, specifier: string): string {
  const target = posix.normalize(posix.join(posix.dirname(from), specifier))
  return target.endsWith('.js') ? target.slice(0, -3) + '.ts' : target
}

function placeOf (file: string): Place {
  const [top, ...rest] = file.split('/')
  if (top === 'gateway' || top === 'bench') return { zone: top }
  if (top !== 'plugin') return { zone: 'outside' }
  const folder = rest.length > 1 ? rest[0] ?? '' : ''
  return { zone: 'plugin', folder, rank: RANKS.get(folder) }
}

function layerName (folder: string): string {
  return folder === '' ? 'plugin root' : folder
}

// Why an edge within the plugin breaks the layering, or undefined if it does not.
function pluginEdgeProblem (from: { folder: string, rank: number }, to: Place): string | undefined {
  if (to.zone === 'gateway' || to.zone === 'bench') return `plugin imports ${to.zone}`
  if (to.zone !== 'plugin') return undefined
  if (to.rank === undefined) return `folder plugin/${to.folder}/ has no layer`
  if (to.rank > from.rank) return `${layerName(from.folder)} imports ${layerName(to.folder)}`
  if (to.rank === from.rank && from.rank === RANKS.get('client') && to.folder !== from.folder) {
    return `${from.folder} imports ${to.folder}`
  }
  return undefined
}

// Why an edge from gateway or bench breaks the layering, or undefined if it does not.
function appEdgeProblem (zone: 'gateway' | 'bench', target: string, to: Place): string | undefined {
  if (to.zone === 'plugin' && !PLUGIN_ENTRIES.has(target)) {
    return `${zone} imports plugin internals; use plugin/index.ts or plugin/client/index.ts`
  }
  if (zone === 'gateway' && to.zone === 'bench') return 'gateway imports bench'
  if (zone === 'bench' && to.zone === 'gateway' && target !== GATEWAY_ENTRY) {
    return `bench imports gateway internals; use ${GATEWAY_ENTRY}`
  }
  return undefined
}

function edgeProblem (from: Place, target: string): string | undefined {
  const to = placeOf(target)
  if (from.zone === 'plugin') {
    return from.rank === undefined ? undefined : pluginEdgeProblem({ folder: from.folder, rank: from.rank }, to)
  }
  if (from.zone === 'gateway' || from.zone === 'bench') return appEdgeProblem(from.zone, target, to)
  return undefined
}

// Every import that climbs a layer, as 'from -> to (why)', plus plugin files in a folder with no layer.
function upwardEdges (files: Map<string, string>): string[] {
  const violations: string[] = []
  for (const [file, source] of files) {
    const from = placeOf(file)
    if (from.zone === 'plugin' && from.rank === undefined) {
      violations.push(`${file} (folder plugin/${from.folder}/ has no layer; give it a rank in test/layers.test.ts)`)
    }
    for (const specifier of specifiers(source)) {
      if (!specifier.startsWith('.')) continue
      const target = resolve(file, specifier)
      const problem = edgeProblem(from, target)
      if (problem !== undefined) violations.push(`${file} -> ${target} (${problem})`)
    }
  }
  return violations
}

function readSources (): Map<string, string> {
  const files = new Map<string, string>()
  for (const dir of SOURCE_DIRS) {
    const names = readdirSync(posix.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    for (const name of names.filter((n) => n.endsWith('.ts')).sort()) {
      const file = posix.join(dir, name.split('\\').join('/'))
      files.set(file, readFileSync(posix.join(ROOT, file), 'utf8'))
    }
  }
  return files
}

function check (files: Record<string, string>): string[] {
  return upwardEdges(new Map(Object.entries(files)))
}

t.test('the checker reports an upward edge', async (t) => {
  t.same(check({ 'plugin/store/token-cache.ts': "import { x } from '../oauth/tokens.js'\n" }), [
    'plugin/store/token-cache.ts -> plugin/oauth/tokens.ts (store imports oauth)'
  ])
  t.same(check({ 'plugin/core/errors.ts': "import { y } from '../index.js'\n" }), [
    'plugin/core/errors.ts -> plugin/index.ts (core imports plugin root)'
  ])
})

t.test('the checker passes same-layer and downward edges', async (t) => {
  t.same(check({
    'plugin/oauth/grants/code.ts': "import { a } from '../issue-tokens.js'\nimport type { S } from '../../store/store.js'\n",
    'plugin/client/sign.ts': "import { b } from './token-response.js'\nimport { c } from '../core/errors.js'\n",
    'plugin/index.ts': "export { d } from './options.js'\nimport { e } from './oauth/token-endpoint.js'\n",
    'gateway/cli.ts': "import { f } from './server.js'\nimport { g } from '../plugin/index.js'\nimport fastify from 'fastify'\n",
    'bench/run.ts': "import { h } from '../gateway/server.js'\nimport { i } from '../plugin/client/index.js'\n"
  }), [])
})

t.test('the checker lets gateway import only the plugin package entries', async (t) => {
  t.same(check({ 'gateway/server.ts': "import { macAuthHook } from '../plugin/mac/hook.js'\n" }), [
    'gateway/server.ts -> plugin/mac/hook.ts (gateway imports plugin internals; use plugin/index.ts or plugin/client/index.ts)'
  ])
  t.same(check({ 'gateway/server.ts': "import macgate from '../plugin/index.js'\n" }), [])
})

t.test('the checker sees a multi-line import', async (t) => {
  const source = [
    'import {',
    '  issueTokens,',
    '  type LiveTokens',
    "} from '../oauth/issue-tokens.js'",
    ''
  ].join('\n')
  t.same(check({ 'plugin/mac/verify.ts': source }), [
    'plugin/mac/verify.ts -> plugin/oauth/issue-tokens.ts (mac imports oauth)'
  ])
})

t.test('the checker sees dynamic, side-effect and re-export imports', async (t) => {
  t.same(check({ 'plugin/store/redis.ts': "const m = await import('../mac/hook.js')\n" }), [
    'plugin/store/redis.ts -> plugin/mac/hook.ts (store imports mac)'
  ])
  t.same(check({ 'plugin/store/redis.ts': "import '../oauth/grants/code.js'\nexport * from '../account/session.js'\n" }), [
    'plugin/store/redis.ts -> plugin/account/session.ts (store imports account)',
    'plugin/store/redis.ts -> plugin/oauth/grants/code.ts (store imports oauth)'
  ], 'both edges are reported')
})

t.test('the checker lets bench import only gateway/server.ts', async (t) => {
  t.same(check({ 'bench/target.ts': "import { proxy } from '../gateway/proxy.js'\n" }), [
    'bench/target.ts -> gateway/proxy.ts (bench imports gateway internals; use gateway/server.ts)'
  ])
})

t.test('the checker keeps plugin below gateway, and gateway below bench', async (t) => {
  t.same(check({
    'plugin/options.ts': "import { c } from '../gateway/config.js'\n",
    'gateway/stores.ts': "import { p } from '../bench/paths.js'\n"
  }), [
    'plugin/options.ts -> gateway/config.ts (plugin imports gateway)',
    'gateway/stores.ts -> bench/paths.ts (gateway imports bench)'
  ])
})

t.test('the checker keeps client and account apart', async (t) => {
  t.same(check({
    'plugin/client/sign.ts': "import { s } from '../account/session.js'\n",
    'plugin/account/signin.ts': "import { sign } from '../client/sign.js'\n"
  }), [
    'plugin/client/sign.ts -> plugin/account/session.ts (client imports account)',
    'plugin/account/signin.ts -> plugin/client/sign.ts (account imports client)'
  ])
})

t.test('the checker reports a plugin folder with no layer', async (t) => {
  t.same(check({ 'plugin/misc/util.ts': "import { e } from '../core/errors.js'\n" }), [
    'plugin/misc/util.ts (folder plugin/misc/ has no layer; give it a rank in test/layers.test.ts)'
  ])
})

t.test('the checker ignores imports in template strings and comments that start mid-line', async (t) => {
  const source = "const page = `<script> import x from '../oauth/token.js' </script>`\n// import y from '../oauth/token.js'\n"
  t.same(check({ 'plugin/core/html.ts': source }), [])
})

t.test('no source file imports a layer above it', async (t) => {
  const files = readSources()
  t.ok(files.size >= 30, `read ${files.size} source files under ${SOURCE_DIRS.join(', ')}`)
  t.same(upwardEdges(files), [], [
    'an import climbs a layer (order at the top of test/layers.test.ts):',
    'move the shared code down into the lower layer (plugin/core/ for leaf helpers),',
    'or from gateway/bench import only plugin/index.ts, plugin/client/index.ts or gateway/server.ts'
  ].join(' '))
})
