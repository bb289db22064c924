// The gateway config: defaults, the field named in every refusal, the environment override, its
// effect at the gateway, and `macgate start --config` refusing a bad file.
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runInProcess } from '../../helpers/in-process.ts'
import { spawnSource } from '../../helpers/source.ts'
import { ConfigError, loadConfig, parseConfig, sampleRoutes } from '../../../gateway/config/gateway-config.ts'
import { awayFromMinuteEdge, buildTestGateway, liveToken, nonceAt, openApiError, signedInject } from '../../helpers/gateway.ts'

const DEFAULTS = {
  routes: [
    { path: '/user/profile', methods: ['GET'], scopes: ['1'], match: 'all' },
    { path: '/user/openidV2', methods: ['GET'], scopes: ['3'], match: 'all' },
    { path: '/user/phoneAndEmail', methods: ['GET'], scopes: ['4', '6'], match: 'any' }
  ],
  forwardMethodOverride: false,
  macDebug: false,
  refreshReuseGraceSeconds: 0,
  nonceSkewMinutes: 5,
  macQueryVariants: true,
  tokenCache: { max: 100_000, maxAgeMs: 300_000, negativeTtlMs: 10_000 },
  strictRedirectUri: false,
  codeTtl: 300,
  accessTokenTtl: 7_776_000,
  refreshTokenTtl: 315_360_000,
  signInRateLimit: 10,
  clientAuthRateLimit: { perClient: 10, perAddress: 50 },
  secureCookies: false,
  deviceCodeTtl: 600,
  devicePollInterval: 5,
  deviceAuthorizationRateLimit: { perClient: 600, perAddress: 30 },
  userCodeGuessLimit: { perSession: 5, perAddress: 20, perDeployment: 100 },
  timeouts: { connectMs: 5000, headersMs: 30_000, bodyIdleMs: 30_000 },
  upstreamPool: { connections: 128, maxWaiting: 1024, ejectAfterFailures: 3, ejectMs: 10_000 },
  clientTimeouts: { headersMs: 15_000, requestMs: 300_000, keepAliveMs: 72_000, checkIntervalMs: 5000 },
  http2: { maxConcurrentStreams: 100 },
  hsts: { maxAgeSeconds: 31_536_000, includeSubDomains: false },
  tracing: { acceptIncomingContext: false },
  cors: true,
  corsOriginCacheMs: 10_000,
  signedHosts: [],
  drainDelayMs: 0,
  drainMs: 30_000,
  registration: 'off',
  registrationRateLimit: 10,
  developerConsole: 'off',
  developerAppLimit: 20
}

// Every field a config file may have, as a refusal of an unknown one lists them.
const KNOWN = '(known: upstream, routes, forwardMethodOverride, timeouts, upstreamPool, clientTimeouts, tls, http2, hsts, trustProxy, drainDelayMs, drainMs, tracing, scopes, strictRedirectUri, tokenErrorStatus, codeTtl, accessTokenTtl, refreshTokenTtl, signInRateLimit, clientAuthRateLimit, secureCookies, deviceCodeTtl, devicePollInterval, deviceAuthorizationRateLimit, userCodeGuessLimit, macDebug, refreshReuseGraceSeconds, issuer, nonceSkewMinutes, macQueryVariants, signedHosts, tokenCache, cors, corsOriginCacheMs, registration, registrationRateLimit, developerConsole, developerAppLimit)'

function refusal (input: unknown, env: NodeJS.ProcessEnv = {}): string {
  try {
    parseConfig(input, env)
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    return error.message
  }
  return 'accepted'
}

t.test('defaults: the sample routes, a 5 minute nonce window', async (t) => {
  t.same(sampleRoutes, DEFAULTS.routes)
  t.same(parseConfig({}), DEFAULTS)
  t.same(parseConfig(undefined), DEFAULTS)
  t.same(parseConfig(null), DEFAULTS)
  const input = { routes: [{ path: '/a/*' }], tokenCache: { max: 0 } }
  t.same(parseConfig(input), { ...DEFAULTS, routes: [{ path: '/a/*', methods: ['GET'], scopes: [], match: 'all' }], tokenCache: { ...DEFAULTS.tokenCache, max: 0 } })
  t.same(input, { routes: [{ path: '/a/*' }], tokenCache: { max: 0 } }, 'the input is left as it was')
  t.same(parseConfig({ tokenErrorStatus: 200, codeTtl: 600 }), { ...DEFAULTS, tokenErrorStatus: 200, codeTtl: 600 })
})

t.test('every refusal names the field', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ routes: [{ path: '/a', scopes: 'x' }] }, 'config.routes[0].scopes must be array'],
    [{ routes: [{ path: '/a' }, { path: '/b', scopes: ['x'] }] }, 'config.routes[1].scopes[0] must match pattern "^[0-9]+$"'],
    [{ routes: [{ path: '/a', methods: ['get'] }] }, 'config.routes[0].methods[0] must be one of "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"'],
    [{ routes: [{ path: '/a', methods: [] }] }, 'config.routes[0].methods must NOT have fewer than 1 items'],
    [{ routes: [{ path: 'a' }] }, 'config.routes[0].path must match pattern "^/[^?#]*$"'],
    [{ routes: [{ path: '/a?b=1' }] }, 'config.routes[0].path must match pattern "^/[^?#]*$"'],
    [{ routes: [{ path: '/a', match: 'some' }] }, 'config.routes[0].match must be one of "all", "any"'],
    [{ routes: [{ scopes: [] }] }, "config.routes[0] must have required property 'path'"],
    [{ routes: [{ path: '/a', extra: 1 }] }, 'config.routes[0] has an unknown field extra (known: path, methods, scopes, match, upstream, timeouts, quota)'],
    [{ codeTtl: 601 }, 'config.codeTtl must be a whole number from 1 to 600'],
    [{ codeTtl: 0 }, 'config.codeTtl must be a whole number from 1 to 600'],
    [{ deviceCodeTtl: 1801 }, 'config.deviceCodeTtl must be a whole number from 1 to 1800'],
    [{ userCodeGuessLimit: { perDeployment: 0 } }, 'config.userCodeGuessLimit.perDeployment must be a whole number of at least 1'],
    [{ accessTokenTtl: 1.5 }, 'config.accessTokenTtl must be integer'],
    [{ nonceSkewMinutes: 61 }, 'config.nonceSkewMinutes must be a whole number from 1 to 60'],
    [{ tokenCache: { max: -1 } }, 'config.tokenCache.max must be a whole number of at least 0'],
    [{ tokenErrorStatus: 400 }, 'config.tokenErrorStatus can only be 200'],
    [{ foo: 1 }, `config has an unknown field foo ${KNOWN}`],
    [{ upstream: 'ftp://upstream.example', routes: [{ path: '/a' }] }, 'config.upstream must match pattern "^https?://"'],
    [[], 'config must be object']
  ]
  for (const [input, problem] of cases) t.equal(refusal(input), `invalid config: ${problem}`, JSON.stringify(input))
  // Every problem at once, each with its field.
  t.equal(refusal({ codeTtl: 601, foo: 1 }), `invalid config: config has an unknown field foo ${KNOWN}; config.codeTtl must be a whole number from 1 to 600`)

  // URLs that only look like one are refused here, not at start with a bare "Invalid URL".
  for (const upstream of ['http://', 'http://bad host']) {
    t.match(refusal({ upstream, routes: [{ path: '/a' }] }), /^invalid config: config\.upstream /, `upstream ${JSON.stringify(upstream)} is refused, naming config.upstream`)
  }
})

t.test('upstream: MACGATE_UPSTREAM overrides, routes required', async (t) => {
  const routes = [{ path: '/api/*', methods: ['GET', 'POST'] }]
  t.equal(parseConfig({ upstream: 'http://a.example', routes }, { MACGATE_UPSTREAM: 'https://b.example:9000' }).upstream, 'https://b.example:9000')
  t.equal(parseConfig({ routes }, { MACGATE_UPSTREAM: 'http://c.example' }).upstream, 'http://c.example')
  t.equal(parseConfig({ upstream: 'http://a.example', routes }, { MACGATE_UPSTREAM: '' }).upstream, 'http://a.example', 'an empty variable is no override')
  t.equal(parseConfig({ upstream: 'http://a.example', routes }).routes[0]?.match, 'all')
  // Refused, not defaulted to every path for any token: the message shows the config to write.
  t.match(refusal({ upstream: 'http://a.example' }), /^invalid config: config\.routes must list at least one route with config\.upstream: .*macgate start --config gateway\.json.*"routes": \[\{"path": /)
  t.match(refusal({}, { MACGATE_UPSTREAM: 'http://a.example' }), /^invalid config: config\.routes must list at least one route with MACGATE_UPSTREAM: .*"path": "\/\*"/)
  t.equal(refusal({ routes: [] }), 'invalid config: config.routes must list at least one route (leave it out for the sample open API\'s routes)')
  t.equal(refusal({ routes }, { MACGATE_UPSTREAM: 'gopher://x' }), 'invalid config: config.upstream must match pattern "^https?://"', 'the variable is checked like the field')
})

t.test('upstreams: one URL or several, per route; timeouts, pools and client timeouts checked', async (t) => {
  const routes = [{ path: '/a/*', upstream: ['http://a1.example:9000', 'http://a2.example:9000/base'], timeouts: { headersMs: 500 } }, { path: '/b' }]
  const config = parseConfig({ upstream: ['http://b.example'], routes })
  t.same(config.upstream, ['http://b.example'])
  t.same(config.routes[0], { path: '/a/*', methods: ['GET'], scopes: [], match: 'all', upstream: ['http://a1.example:9000', 'http://a2.example:9000/base'], timeouts: { headersMs: 500 } })
  const cases: Array<[unknown, string]> = [
    [{ upstream: [], routes }, 'config.upstream must list 1 to 64 URLs'],
    [{ upstream: 7, routes }, 'config.upstream must be a URL or an array of URLs'],
    [{ upstream: ['http://a.example', 'ftp://b.example'], routes }, 'config.upstream[1] must match pattern "^https?://"'],
    [{ upstream: ['http://a.example', 3], routes }, 'config.upstream[1] must be a URL'],
    [{ upstream: ['http://a.example', 'http://a.example/other'], routes }, 'config.upstream names one instance twice'],
    [{ routes: [{ path: '/a', upstream: 'http://bad host' }] }, 'config.routes[0].upstream must be an absolute http or https URL'],
    [{ routes: [{ path: '/a', timeouts: { headersMs: 0 } }] }, 'config.routes[0].timeouts.headersMs must be a whole number from 1 to 3600000'],
    [{ routes: [{ path: '/a', timeouts: { idleMs: 1 } }] }, 'config.routes[0].timeouts has an unknown field idleMs (known: connectMs, headersMs, bodyIdleMs)'],
    [{ upstreamPool: { maxWaiting: -1 } }, 'config.upstreamPool.maxWaiting must be a whole number from 0 to 100000'],
    [{ clientTimeouts: { headersMs: 20_000, requestMs: 10_000 } }, 'config.clientTimeouts.requestMs must be 0 or at least config.clientTimeouts.headersMs (the headers are part of the request)']
  ]
  for (const [input, problem] of cases) t.equal(refusal(input), `invalid config: ${problem}`, JSON.stringify(input))
  t.equal(parseConfig({ clientTimeouts: { headersMs: 20_000, requestMs: 0 } }).clientTimeouts.requestMs, 0, 'no request limit at all is allowed')
})

t.test('loadConfig: file errors say which file', async (t) => {
  const dir = t.testdir({ 'bad.json': '{"codeTtl": 601}', 'not.json': '{codeTtl: 1', 'ok.json': '{"nonceSkewMinutes": 2}' })
  t.same(await loadConfig(join(dir, 'ok.json'), {}), { ...DEFAULTS, nonceSkewMinutes: 2 })
  await t.rejects(loadConfig(join(dir, 'bad.json'), {}), new ConfigError('invalid config: config.codeTtl must be a whole number from 1 to 600'))
  await t.rejects(loadConfig(join(dir, 'not.json'), {}), { name: 'ConfigError', message: new RegExp(`^config file ${join(dir, 'not.json')} is not JSON: `) })
  await t.rejects(loadConfig(join(dir, 'missing.json'), {}), { name: 'ConfigError', message: new RegExp(`^cannot read config file ${join(dir, 'missing.json')}: ENOENT`) })
})

t.test('nonceSkewMinutes takes effect at the gateway', async (t) => {
  const { app } = await buildTestGateway(t, { config: { nonceSkewMinutes: 1 } })
  const token = await liveToken(app)
  await awayFromMinuteEdge()
  const call = async (offset: number) => await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey, nonce: nonceAt(offset) })
  t.equal((await call(-1)).statusCode, 200)
  t.equal((await call(1)).statusCode, 200)
  const stale = await call(-2)
  t.equal(stale.statusCode, 401)
  t.same(stale.json(), openApiError(96012, 'nonce is stale'))
  t.same((await call(2)).json(), openApiError(96012, 'nonce is from the future'))
})

/** The environment `macgate start` gets here: free ports, nothing that would steer it. */
function startEnv (): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', ADMIN_PORT: '0' }
  for (const name of ['REDIS_URL', 'MACGATE_UPSTREAM', 'MACGATE_SECRET', 'NODE_OPTIONS', 'HOST']) delete env[name]
  return env
}

async function start (configFile: string): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawnSource('gateway/cli.ts', ['start', '--config', configFile], { env: startEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => { stdout += String(chunk) })
  child.stderr!.on('data', (chunk) => { stderr += String(chunk) })
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000) // a config that starts would not exit
  const [code] = await once(child, 'close') as [number | null]
  clearTimeout(timer)
  return { code, stdout, stderr }
}

t.test('macgate start --config with a bad file: exit 2, the field named, no stack', async (t) => {
  const dir = t.testdir({})
  const write = (name: string, config: unknown): string => {
    const file = join(dir, name)
    writeFileSync(file, JSON.stringify(config))
    return file
  }
  const runs: Array<[string, string]> = [
    [write('scopes.json', { routes: [{ path: '/a', scopes: 'x' }] }), 'macgate: invalid config: config.routes[0].scopes must be array'],
    [write('ttl.json', { codeTtl: 601 }), 'macgate: invalid config: config.codeTtl must be a whole number from 1 to 600'],
    [write('unknown.json', { listen: 8080 }), `macgate: invalid config: config has an unknown field listen ${KNOWN}`],
    [write('routes.json', { upstream: 'http://127.0.0.1:1' }), 'macgate: invalid config: config.routes must list at least one route with config.upstream: which paths to proxy and the scopes each needs (nothing is proxied by default rather than every path to any valid token). Write them in a file and run `macgate start --config gateway.json`, e.g. {"upstream": "http://127.0.0.1:9000", "routes": [{"path": "/api/*", "methods": ["GET", "POST"], "scopes": ["1"]}]}; a route {"path": "/*", "methods": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]} proxies every path to any valid token']
  ]
  // The first as the shell runs it; the rest through the same dispatch in process (a subprocess
  // spends seconds loading the sources before it reads the file).
  for (const [index, [file, line]] of runs.entries()) {
    const run = index === 0 ? await start(file) : await runInProcess(['start', '--config', file], startEnv())
    t.equal(run.code, 2, `${file}: exit 2`)
    t.equal(run.stdout, '')
    // A bad config file is not a mistake in the command line: no pointer to the usage text.
    t.equal(run.stderr, `${line}\n`)
  }
  // A malformed upstream URL is an operator mistake like any other bad field.
  const badUrl = await runInProcess(['start', '--config', write('upstream.json', { upstream: 'http://bad host', routes: [{ path: '/a' }] })], startEnv())
  t.equal(badUrl.code, 2, 'a malformed upstream URL: exit 2')
  t.match(badUrl.stderr, /^macgate: invalid config: config\.upstream /, 'naming config.upstream')
  t.notMatch(badUrl.stderr, /\n {4}at /, 'no stack trace')
})
