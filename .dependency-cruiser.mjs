// The layer rules (ARCHITECTURE.md), checked by dependency-cruiser: `npm run layers`, run by
// `npm run lint`. Inside plugin/ a file imports only its own layer or the ones below; folders that
// share a layer stay apart; files directly in plugin/ are the top. gateway/ and bench/ reach the
// plugin only through its package entries, and bench reaches gateway only through its entry.
// A new plugin folder is one line in LAYERS; a folder missing there is itself an error.

/** plugin/ folders, bottom layer first; folders in one entry share a layer. */
const LAYERS = [
  ['http'],
  ['observe'],
  ['access'],
  ['store'],
  ['config'],
  ['mac', 'cors'],
  ['client', 'account'],
  ['oauth'],
  ['operator'],
  ['developer']
]

/** What package.json exports: the only plugin and gateway files the layers above may import. */
const PLUGIN_ENTRIES = ['plugin/index.ts', 'plugin/client/index.ts']
const GATEWAY_ENTRY = 'gateway/server.ts'
/** The benchmark's `--parts`: the one bench file that imports the parts it times. */
const PARTS_BENCH = 'bench/parts.ts'

const any = (names) => `(${names.join('|')})`
const folder = (names) => `^plugin/${any(names)}/`
const exactly = (paths) => `^${any(paths.map((path) => path.replaceAll('.', '\\.')))}$`
const PLUGIN_ROOT_FILE = '^plugin/[^/]+$'

/** For each layer: no import of a layer above (or of plugin/'s own files), nor of a sibling folder. */
const layerRules = LAYERS.flatMap((names, rank) => {
  const above = LAYERS.slice(rank + 1).flat()
  return [
    {
      name: `${names.join('-')}-imports-up`,
      comment: `plugin/${names.join('/, plugin/')}/ may import only its own layer or the ones below`,
      severity: 'error',
      from: { path: folder(names) },
      to: { path: above.length > 0 ? [folder(above), PLUGIN_ROOT_FILE] : PLUGIN_ROOT_FILE }
    },
    ...names.map((name) => ({
      name: `${name}-imports-sibling`,
      comment: `plugin/${name}/ shares a layer with ${names.filter((n) => n !== name).join(', ')}: they stay apart`,
      severity: 'error',
      from: { path: folder([name]) },
      to: { path: folder(names), pathNot: folder([name]) }
    })).filter(() => names.length > 1)
  ]
})

export default {
  forbidden: [
    ...layerRules,
    {
      name: 'folder-without-layer',
      comment: 'every plugin/ folder has a layer: add it to LAYERS in .dependency-cruiser.mjs',
      severity: 'error',
      from: {},
      to: { path: '^plugin/[^/]+/', pathNot: folder(LAYERS.flat()) }
    },
    {
      name: 'folder-without-layer-imports',
      comment: 'every plugin/ folder has a layer: add it to LAYERS in .dependency-cruiser.mjs',
      severity: 'error',
      from: { path: '^plugin/[^/]+/', pathNot: folder(LAYERS.flat()) },
      to: {}
    },
    {
      name: 'plugin-imports-app',
      comment: 'the plugin is below gateway and bench',
      severity: 'error',
      from: { path: '^plugin/' },
      to: { path: '^(gateway|bench)/' }
    },
    {
      name: 'app-imports-plugin-internals',
      comment: `gateway and bench use the plugin through its package entries: ${PLUGIN_ENTRIES.join(', ')}`,
      severity: 'error',
      // bench/parts.ts times each part of the hot path alone, so it reaches the parts themselves.
      from: { path: '^(gateway|bench)/', pathNot: exactly([PARTS_BENCH]) },
      to: { path: '^plugin/', pathNot: exactly(PLUGIN_ENTRIES) }
    },
    {
      name: 'gateway-imports-bench',
      comment: 'gateway is below bench',
      severity: 'error',
      from: { path: '^gateway/' },
      to: { path: '^bench/' }
    },
    {
      name: 'bench-imports-gateway-internals',
      comment: `bench uses gateway through its package entry: ${GATEWAY_ENTRY}`,
      severity: 'error',
      from: { path: '^bench/', pathNot: exactly([PARTS_BENCH]) },
      to: { path: '^gateway/', pathNot: exactly([GATEWAY_ENTRY]) }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    // Type-only imports count too: a layer's types are part of its interface.
    tsPreCompilationDeps: true,
    // NodeNext imports name the .js that the .ts becomes.
    tsConfig: { fileName: 'tsconfig.check.json' },
    reporterOptions: { text: { highlightFocused: true } }
  }
}
