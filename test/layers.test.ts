// The layer rules live in .dependency-cruiser.mjs and run as `npm run layers` (part of `npm run
// lint`). Here: the real tree passes them, and a copy of it with planted imports that climb shows each
// rule failing: up a plugin layer (static, multi-line, type-only, dynamic, side-effect and re-export
// imports alike), between folders that share a layer, past the package entries, plugin below gateway
// below bench, a plugin folder that has no layer, gateway/'s own layers (parts below the assembly
// below the commands below the entries; the folders that stay apart; a folder with no place), and
// a circle of type-only imports. Check with: npx tap test/layers.test.ts
import { execFile } from 'node:child_process'
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t from 'tap'
import { ROOT } from './helpers/source.ts'

t.setTimeout(120_000)

const CONFIG = join(ROOT, '.dependency-cruiser.mjs')
const CLI = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs')
const SOURCE_DIRS = ['plugin', 'gateway', 'bench']

/** `npm run layers` in `cwd`: its exit code and its report, read back as 'from -> to (rule)', sorted. */
async function cruise (cwd: string): Promise<{ code: number, cruised: number, errors: number, violations: string[] }> {
  const args = [CLI, '--config', CONFIG, '--output-type', 'err', ...SOURCE_DIRS]
  const { code, stdout } = await new Promise<{ code: number, stdout: string }>((resolve, reject) => {
    execFile(process.execPath, args, { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => {
      if (error !== null && typeof error.code !== 'number') reject(error)
      else resolve({ code: error === null ? 0 : Number(error.code), stdout })
    })
  })
  // The err reporter's lines: "  error <rule>: <from> → <to>" (a circle's next module on a line of its
  // own, then the rest of the circle), then "... (N errors, ...). M modules, ... cruised."
  const violations = [...stdout.matchAll(/^ {2}error ([\w-]+): (\S+) → ?(?:\n +)?(\S+)/gm)].map(([, rule, from, to]) => `${from} -> ${to} (${rule})`).sort()
  const errors = Number(/\((\d+) errors?,/.exec(stdout)?.[1] ?? 0)
  const cruised = Number(/(\d+) modules, \d+ dependencies cruised/.exec(stdout)?.[1] ?? 0)
  return { code, cruised, errors, violations }
}

/** Files planted in a copy of the tree: targets to import, then importers that break (or keep) the rules. */
const PLANTED: Record<string, string> = {
  'plugin/planted.ts': 'export const x = 1\n',
  'plugin/http/planted.ts': 'export const x = 1\n',
  'plugin/observe/planted.ts': 'export const x = 1\n',
  'plugin/store/planted.ts': 'export const x = 1\n',
  'plugin/mac/planted.ts': 'export const x = 1\n',
  'plugin/client/planted.ts': 'export const x = 1\n',
  'plugin/account/planted.ts': 'export const x = 1\n',
  'plugin/oauth/planted.ts': 'export const x = 1\nexport type T = number\n',
  'plugin/developer/planted.ts': 'export const x = 1\n',
  'gateway/planted.ts': 'export const x = 1\n',
  'bench/planted.ts': 'export const x = 1\n',

  'plugin/store/climbs.ts': "import { x } from '../oauth/planted.js'\nexport const y = x\n",
  'plugin/http/climbs.ts': "import { x } from '../planted.js'\nexport const y = x\n",
  'plugin/http/into-observe.ts': "export { x } from '../observe/planted.js'\n",
  'plugin/observe/climbs.ts': "export { x } from '../store/planted.js'\n",
  'plugin/mac/multi-line.ts': "import {\n  x,\n  type T\n} from '../oauth/planted.js'\nexport const y: T = x\n",
  'plugin/store/type-only.ts': "import type { T } from '../oauth/planted.js'\nexport const y: T = 1\n",
  'plugin/store/dynamic.ts': "export const m = await import('../mac/planted.js')\n",
  'plugin/store/side-effect.ts': "import '../oauth/planted.js'\nexport * from '../account/planted.js'\n",
  'plugin/operator/climbs.ts': "export { x } from '../developer/planted.js'\n",
  'plugin/client/apart.ts': "export { x } from '../account/planted.js'\n",
  'plugin/account/apart.ts': "export { x } from '../client/planted.js'\n",
  'plugin/up-to-gateway.ts': "export { x } from '../gateway/planted.js'\n",
  'plugin/misc/util.ts': "export { x } from '../http/planted.js'\n",
  'plugin/http/into-misc.ts': "export { x } from '../misc/util.js'\n",
  'gateway/internals.ts': "export { x } from '../plugin/mac/planted.js'\n",
  'gateway/up-to-bench.ts': "export { x } from '../bench/planted.js'\n",
  'bench/internals.ts': "export { x } from '../gateway/planted.js'\n",
  'gateway/open-api/planted.ts': 'export const x = 1\n',
  'gateway/operator/planted.ts': 'export const x = 1\n',
  'gateway/site/planted.ts': 'export const x = 1\n',
  'gateway/assembly/planted.ts': 'export const x = 1\n',
  'gateway/commands/planted.ts': 'export const x = 1\n',
  'gateway/open-api/into-commands.ts': "export { x } from '../commands/planted.js'\n",
  'gateway/site/into-cli.ts': "import '../cli.js'\n",
  'gateway/assembly/into-commands.ts': "export { x } from '../commands/planted.js'\n",
  'gateway/commands/into-entry.ts': "export * from '../index.js'\n",
  'gateway/open-api/into-operator.ts': "export { x } from '../operator/planted.js'\n",
  'gateway/site/into-open-api.ts': "export { x } from '../open-api/planted.js'\n",
  'gateway/open-api/into-site.ts': "export { x } from '../site/planted.js'\n",
  'gateway/load/into-service.ts': "import type { x } from '../open-api/planted.js'\nexport type X = typeof x\n",
  'gateway/misc/util.ts': 'export const x = 1\n',
  'gateway/operator/into-misc.ts': "export { x } from '../misc/util.js'\n",
  'gateway/load/circle-a.ts': "import type { B } from './circle-b.js'\nexport type A = B | 1\n",
  'gateway/load/circle-b.ts': "import type { A } from './circle-a.js'\nexport type B = A | 2\n",
  'bench/ladder-gateway.ts': "export { assembleGateway } from '../gateway/assembly/build-gateway.js'\nexport { x } from '../gateway/open-api/planted.js'\n",

  // Same-layer and downward imports, the package entries, and text that only looks like an import.
  'plugin/oauth/down.ts': "export { x } from '../store/planted.js'\nexport { x as z } from '../client/planted.js'\n",
  'plugin/down.ts': "export { x } from './oauth/planted.js'\n",
  'plugin/client/same-folder.ts': "export { x } from './planted.js'\n",
  'gateway/entries.ts': "export * from '../plugin/index.ts'\nexport * as client from '../plugin/client/index.ts'\n",
  'bench/entries.ts': "export * from '../gateway/index.ts'\n",
  'gateway/operator/down.ts': "export { x } from '../open-api/planted.js'\nexport { drainAndClose } from '../edge/drain.js'\n",
  'gateway/commands/down.ts': "export { x } from '../assembly/planted.js'\nexport { x as y } from '../site/planted.js'\n",
  'plugin/http/text.ts': "export const page = `<script> import x from '../oauth/planted.js' </script>`\n// import y from '../oauth/planted.js'\n"
}

/**
 * One run of the check (it takes seconds of CPU), on a copy of the tree with the planted files beside
 * the real ones: the real files must show no violation, each planted climb exactly one.
 */
async function cruisePlantedCopy (): Promise<Awaited<ReturnType<typeof cruise>>> {
  const copy = await mkdtemp(join(tmpdir(), 'macgate-layers-'))
  t.teardown(async () => await rm(copy, { recursive: true, force: true }))
  for (const entry of [...SOURCE_DIRS, 'tsconfig.json', 'tsconfig.check.json']) {
    await cp(join(ROOT, entry), join(copy, entry), { recursive: true })
  }
  for (const [file, source] of Object.entries(PLANTED)) {
    await mkdir(dirname(join(copy, file)), { recursive: true })
    await writeFile(join(copy, file), source)
  }
  return await cruise(copy)
}

const { code, cruised, errors, violations } = await cruisePlantedCopy()

t.test('no source file imports a layer above it', async (t) => {
  t.ok(cruised >= 30 + Object.keys(PLANTED).length, `cruised ${cruised} modules under ${SOURCE_DIRS.join(', ')}`)
  t.same(violations.filter((line) => !(line.split(' -> ')[0]! in PLANTED)), [], [
    'an import climbs a layer (order in .dependency-cruiser.mjs):',
    'move the shared code down into the lower layer (plugin/http/ for the leaves),',
    'or from gateway/bench import only plugin/index.ts, plugin/client/index.ts or gateway/index.ts'
  ].join(' '))
})

t.test('planted upward imports fail the check, one violation each', async (t) => {
  t.same(violations, [
    'bench/internals.ts -> gateway/planted.ts (bench-imports-gateway-internals)',
    'bench/ladder-gateway.ts -> gateway/open-api/planted.ts (ladder-imports-gateway-internals)',
    'gateway/assembly/into-commands.ts -> gateway/commands/planted.ts (gateway-assembly-imports-up)',
    'gateway/commands/into-entry.ts -> gateway/index.ts (gateway-commands-import-entry)',
    'gateway/internals.ts -> plugin/mac/planted.ts (app-imports-plugin-internals)',
    'gateway/load/circle-a.ts -> gateway/load/circle-b.ts (no-circular)',
    'gateway/load/into-service.ts -> gateway/open-api/planted.ts (gateway-load-imports-service)',
    'gateway/open-api/into-commands.ts -> gateway/commands/planted.ts (gateway-part-imports-up)',
    'gateway/open-api/into-operator.ts -> gateway/operator/planted.ts (gateway-request-path-imports-operator)',
    'gateway/open-api/into-site.ts -> gateway/site/planted.ts (gateway-open-api-imports-site)',
    'gateway/operator/into-misc.ts -> gateway/misc/util.ts (gateway-folder-without-place)',
    'gateway/site/into-cli.ts -> gateway/cli.ts (gateway-part-imports-up)',
    'gateway/site/into-open-api.ts -> gateway/open-api/planted.ts (gateway-site-imports-request-path)',
    'gateway/up-to-bench.ts -> bench/planted.ts (gateway-imports-bench)',
    'plugin/account/apart.ts -> plugin/client/planted.ts (account-imports-sibling)',
    'plugin/client/apart.ts -> plugin/account/planted.ts (client-imports-sibling)',
    'plugin/http/climbs.ts -> plugin/planted.ts (http-imports-up)',
    'plugin/http/into-misc.ts -> plugin/misc/util.ts (folder-without-layer)',
    'plugin/http/into-observe.ts -> plugin/observe/planted.ts (http-imports-up)',
    'plugin/mac/multi-line.ts -> plugin/oauth/planted.ts (mac-cors-imports-up)',
    'plugin/misc/util.ts -> plugin/http/planted.ts (folder-without-layer-imports)',
    'plugin/observe/climbs.ts -> plugin/store/planted.ts (observe-imports-up)',
    'plugin/operator/climbs.ts -> plugin/developer/planted.ts (operator-imports-up)',
    'plugin/store/climbs.ts -> plugin/oauth/planted.ts (store-imports-up)',
    'plugin/store/dynamic.ts -> plugin/mac/planted.ts (store-imports-up)',
    'plugin/store/side-effect.ts -> plugin/account/planted.ts (store-imports-up)',
    'plugin/store/side-effect.ts -> plugin/oauth/planted.ts (store-imports-up)',
    'plugin/store/type-only.ts -> plugin/oauth/planted.ts (store-imports-up)',
    'plugin/up-to-gateway.ts -> gateway/planted.ts (plugin-imports-app)'
  ], 'each planted climb, and nothing else')
  t.equal(errors, 29, 'every violation is an error')
  t.equal(code, 29, 'the check fails, its exit code the number of errors')
})
