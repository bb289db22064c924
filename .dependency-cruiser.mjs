// The layer rules (ARCHITECTURE.md), checked by dependency-cruiser: `npm run layers`, run by
// `npm run lint`. Inside plugin/ a file imports only its own layer or the ones below; folders that
// share a layer stay apart; files directly in plugin/ are the top. gateway/ and bench/ reach the
// plugin only through its package entries, and bench reaches gateway only through its entry.
// Inside gateway/ the parts are below the assembly, the assembly below the commands, and the
// entries (index.ts, cli.ts) on top; no import goes round in a circle anywhere.
// A new plugin folder is one line in LAYERS, a new gateway folder one in GATEWAY_PARTS (or
// GATEWAY_ABOVE); a folder missing there is itself an error.

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
const GATEWAY_ENTRY = 'gateway/index.ts'
/** The benchmark's `--parts`: the one bench file that imports the parts it times. */
const PARTS_BENCH = 'bench/parts.ts'
/** The ladder's gateway, with stand-ins for the parts a rung has off: the one bench file that builds it from gateway/assembly/. */
const LADDER_BENCH = 'bench/ladder-gateway.ts'
const LADDER_BUILD = 'gateway/assembly/build-gateway.ts'

/**
 * gateway/'s parts, each a folder: the config file; the edge (TLS, client connections, trusted
 * proxies, drain); the open API's path (route check, proxy, upstreams, CORS, error answers); the
 * operator's side (admin listener and API, health, metrics, logs, tracing, reload); the site
 * (landing, demo, sample API); the load tester. Above them the assembly (building the gateway),
 * above it the CLI's commands; index.ts and cli.ts, the entries, at the root.
 */
const GATEWAY_PARTS = ['config', 'edge', 'open-api', 'operator', 'site', 'load']
const GATEWAY_ABOVE = ['assembly', 'commands']
const gatewayFolder = (names) => `^gateway/${any(names)}/`
const GATEWAY_ROOT_FILE = '^gateway/[^/]+$'

const any = (names) => `(${names.join('|')})`
const folder = (names) => `^plugin/${any(names)}/`
const exactly = (paths) => `^${any(paths.map((path) => path.replaceAll('.', '\\.')))}$`
const PLUGIN_ROOT_FILE = '^plugin/[^/]+$'

/** Inside gateway/: each rule keeps one group of folders from importing what is above or beside it. */
const gatewayRules = [
  {
    name: 'gateway-part-imports-up',
    comment: `gateway/${GATEWAY_PARTS.join('/, gateway/')}/ are parts: they import no assembly, command or entry`,
    from: { path: gatewayFolder(GATEWAY_PARTS) },
    to: { path: [gatewayFolder(GATEWAY_ABOVE), GATEWAY_ROOT_FILE] }
  },
  {
    name: 'gateway-assembly-imports-up',
    comment: 'gateway/assembly/ builds the gateway from the parts: it imports no command or entry',
    from: { path: gatewayFolder(['assembly']) },
    to: { path: [gatewayFolder(['commands']), GATEWAY_ROOT_FILE] }
  },
  {
    name: 'gateway-commands-import-entry',
    comment: 'gateway/commands/ is below the CLI and the package entry',
    from: { path: gatewayFolder(['commands']) },
    to: { path: GATEWAY_ROOT_FILE }
  },
  {
    name: 'gateway-request-path-imports-operator',
    comment: "the config, the edge, the open API's path and the site import nothing of the operator's side",
    from: { path: gatewayFolder(['config', 'edge', 'open-api', 'site']) },
    to: { path: gatewayFolder(['operator']) }
  },
  {
    name: 'gateway-site-imports-request-path',
    comment: "the site (landing, demo, sample API) stands apart from the edge, the open API's path and the operator's side",
    from: { path: gatewayFolder(['site']) },
    to: { path: gatewayFolder(['edge', 'open-api', 'operator']) }
  },
  {
    name: 'gateway-open-api-imports-site',
    comment: "the open API's path imports nothing of the site",
    from: { path: gatewayFolder(['open-api']) },
    to: { path: gatewayFolder(['site']) }
  },
  {
    name: 'gateway-load-imports-service',
    comment: 'gateway/load/, the load tester, imports nothing of the service: only the plugin\'s client entry',
    from: { path: gatewayFolder(['load']) },
    to: { path: '^gateway/', pathNot: gatewayFolder(['load']) }
  },
  {
    name: 'gateway-folder-without-place',
    comment: 'every gateway/ folder has its place: add it to GATEWAY_PARTS or GATEWAY_ABOVE in .dependency-cruiser.mjs',
    from: {},
    to: { path: '^gateway/[^/]+/', pathNot: gatewayFolder([...GATEWAY_PARTS, ...GATEWAY_ABOVE]) }
  }
].map((rule) => ({ severity: 'error', ...rule }))

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
    ...gatewayRules,
    {
      name: 'no-circular',
      comment: 'no import goes round in a circle back to its file; type-only imports count (tsPreCompilationDeps)',
      severity: 'error',
      from: {},
      to: { circular: true }
    },
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
      from: { path: '^bench/', pathNot: exactly([PARTS_BENCH, LADDER_BENCH]) },
      to: { path: '^gateway/', pathNot: exactly([GATEWAY_ENTRY]) }
    },
    {
      name: 'ladder-imports-gateway-internals',
      comment: `${LADDER_BENCH} builds the gateway through ${LADDER_BUILD} only (and its package entry)`,
      severity: 'error',
      from: { path: exactly([LADDER_BENCH]) },
      to: { path: '^gateway/', pathNot: exactly([GATEWAY_ENTRY, LADDER_BUILD]) }
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
