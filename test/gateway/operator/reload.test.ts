// Config reloads in process (reload.ts): what is applied in flight, what waits for a restart, what
// is refused; a request in flight finishes on the config it started under. The same through a real
// `macgate start` under load is test/reload-load.test.ts.
import { createServer, type ServerResponse } from 'node:http'
import t, { type Test } from 'tap'
import { parseConfig } from '../../../gateway/config/gateway-config.ts'
import { buildGateway } from '../../../gateway/index.ts'
import { MemoryStore } from '../../../plugin/index.ts'
import { echoRoutes, liveToken, openApiError, recordingUpstream, signedInject } from '../../helpers/gateway.ts'
import { memoryLog } from '../../helpers/memory-log.ts'
import { parseMetrics } from '../../helpers/metrics-text.ts'
import { listenOnLoopback } from '../../helpers/listen.ts'

const NO_SUCH_API = openApiError(404, 'no such API')

async function gateway (t: Test, input: unknown) {
  const log = memoryLog()
  const store = new MemoryStore()
  const app = await buildGateway({ store, config: parseConfig(input), logger: { level: 'info', stream: log.stream } })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  const token = await liveToken(app)
  const call = async (url: string, host = 'api.example.com') => await signedInject(app, { url, token: token.accessToken, macKey: token.macKey, host })
  const reload = async (input: unknown) => await app.configReload.reload(async () => parseConfig(input))
  return { app, log, call, reload }
}

t.test('routes, upstreams, signedHosts and CORS change in flight; the answer says what changed', async (t) => {
  const upstream = await recordingUpstream(t)
  const other = await recordingUpstream(t)
  const base = { upstream: upstream.url, routes: [{ path: '/a', methods: ['GET'] }] }
  const { app, log, call, reload } = await gateway(t, base)
  t.equal((await call('/a')).statusCode, 200)
  const missing = await call('/b')
  t.same([missing.statusCode, missing.json()], [404, NO_SUCH_API], 'no route /b yet')

  const next = { ...base, routes: [{ path: '/a', methods: ['GET'] }, { path: '/b', methods: ['GET'], upstream: other.url, quota: { perMinute: 1 } }], signedHosts: ['open.example.com'], cors: false }
  const answer = await reload(next)
  t.same(answer, { result: 'applied', changed: ['cors', 'routes', 'signedHosts'], needsRestart: [] })
  t.ok(log.lines.some((line) => line.msg === 'config reloaded' && line.level === 30), 'config reloaded, at info')
  t.equal((await call('/b')).statusCode, 200, 'the added route answers from the first request after')
  t.equal(other.requests.length, 1, 'on its own upstream')
  t.equal((await call('/b')).statusCode, 429, 'with its quota')
  t.equal((await signedInject(app, { url: '/a', token: (await liveToken(app)).accessToken, macKey: 'x', host: 'x' })).statusCode, 401)
  const token = await liveToken(app)
  const asSdk = await signedInject(app, { url: '/a', token: token.accessToken, macKey: token.macKey, host: '127.0.0.1', sign: { host: 'open.example.com' } })
  t.equal(asSdk.statusCode, 200, 'a signature over the newly listed host name')
  const preflight = await app.inject({ method: 'OPTIONS', url: '/a', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' } })
  t.notOk(preflight.headers['access-control-allow-origin'], 'CORS off')

  t.same(await reload(next), { result: 'applied', changed: [], needsRestart: [] }, 'the same file again changes nothing')
  const back = await reload(base)
  t.same(back, { result: 'applied', changed: ['cors', 'routes', 'signedHosts'], needsRestart: [] })
  t.same((await call('/b')).json(), NO_SUCH_API, 'a route removed is gone')
  const token2 = await liveToken(app)
  t.equal((await signedInject(app, { url: '/a', token: token2.accessToken, macKey: token2.macKey, host: '127.0.0.1', sign: { host: 'open.example.com' } })).statusCode, 401, 'the name unlisted again')

  const metrics = parseMetrics(await app.macgate.metrics.registry.metrics())
  t.equal(metrics.sum('macgate_config_reloads_total', { result: 'applied' }), 3)
  t.ok(metrics.sum('macgate_config_applied_timestamp_seconds', {}) > Date.now() / 1000 - 60, 'the last applied config\'s time')
})

t.test('a config that fails validation is refused whole, naming the field; the running one stays', async (t) => {
  const upstream = await recordingUpstream(t)
  const base = { upstream: upstream.url, routes: [{ path: '/a', methods: ['GET'] }] }
  const { app, log, call, reload } = await gateway(t, base)
  const bad = await reload({ ...base, routes: [{ path: '/a', methods: ['GET'] }, { path: 'b', methods: ['GET'] }], signedHosts: ['new.example.com'] })
  t.equal(bad.result, 'refused')
  t.match(bad, { error: /config\.routes\[1\]\.path must match pattern/ })
  t.ok(log.lines.some((line) => line.msg === 'config refused; the running config stays' && line.level === 50), 'logged at error')
  t.equal((await call('/a')).statusCode, 200, 'the old config still serves')
  t.equal(app.macVerifier.signedHosts.length, 0, 'nothing of the refused config was applied')
  const unreadable = await app.configReload.reload(async () => { throw new Error('cannot read config file /nope: ENOENT') })
  t.same(unreadable, { result: 'refused', error: 'cannot read config file /nope: ENOENT' })
  const metrics = parseMetrics(await app.macgate.metrics.registry.metrics())
  t.equal(metrics.sum('macgate_config_reloads_total', { result: 'refused' }), 2)
  t.equal(metrics.sum('macgate_config_reloads_total', { result: 'applied' }), 0)
})

t.test('what cannot change in flight is reported as needing a restart and left as it is', async (t) => {
  const upstream = await recordingUpstream(t)
  const base = { upstream: upstream.url, routes: [{ path: '/a', methods: ['GET'] }], issuer: 'https://id.example.com' }
  const { app, call, reload, log } = await gateway(t, base)
  const next = { ...base, trustProxy: ['10.0.0.0/8'], codeTtl: 60, clientTimeouts: { keepAliveMs: 5000, checkIntervalMs: 1000 }, drainMs: 1000 }
  const answer = await reload(next)
  t.same(answer, { result: 'applied', changed: ['clientTimeouts', 'drainMs'], needsRestart: ['clientTimeouts.checkIntervalMs', 'codeTtl', 'trustProxy'] })
  t.ok(log.lines.some((line) => line.level === 40 && JSON.stringify(line.needsRestart) === JSON.stringify(answer.result === 'applied' && answer.needsRestart)), 'logged at warn')
  t.equal(app.server.keepAliveTimeout, 5000, 'the keep-alive timeout is Node\'s server\'s, set anew')
  t.equal(app.configReload.current.drainMs, 1000, 'the drain time is read at SIGTERM from the running config')
  t.equal(app.configReload.current.trustProxy, undefined, 'trustProxy stays as it runs')
  t.equal(app.configReload.current.clientTimeouts.checkIntervalMs, 5000)
  t.same((await reload(next)).result === 'applied' && (await reload(next)), { result: 'applied', changed: [], needsRestart: ['clientTimeouts.checkIntervalMs', 'codeTtl', 'trustProxy'] }, 'and again at the next reload, until a restart')
  const upstreamAnswer = await call('/a')
  t.equal(upstreamAnswer.statusCode, 200)

  // Routes over the landing page's paths, and no upstream at all (the sample API runs only from a start without one).
  const landing = await reload({ ...base, routes: [{ path: '/*', methods: ['GET'] }] })
  t.same(landing, { result: 'applied', changed: ['clientTimeouts', 'drainMs', 'routes'], needsRestart: ['routes (on /, /favicon.svg or /favicon.ico)'] })
  t.equal((await call('/b')).statusCode, 200, 'the wildcard route serves')
  t.match((await app.inject('/')).body, /<h1>macgate<\/h1>/, 'the landing page keeps / until a restart')
  const { upstream: _dropped, ...withoutUpstream } = base
  const sampleless = await reload({ ...withoutUpstream, routes: [{ path: '/user/profile', scopes: ['1'] }] })
  t.same(sampleless, { result: 'applied', changed: ['routes'], needsRestart: ['routes (on /, /favicon.svg or /favicon.ico)', 'upstream'] })
  t.equal((await call('/user/profile')).statusCode, 200, 'the new route, on the running upstream')
  t.equal(upstream.requests.at(-1)!.url, '/user/profile')
})

t.test('a request in flight finishes on its upstream; a kept upstream keeps its pool; a dropped one closes after', async (t) => {
  // A slow upstream: each request waits until the test lets it go.
  const waiting: ServerResponse[] = []
  const slow = createServer((_request, response) => { waiting.push(response) })
  const slowUrl = await listenOnLoopback(t, slow)
  const fast = await recordingUpstream(t)
  const base = { upstream: fast.url, routes: [...echoRoutes.filter((route) => route.path === '/echo/*'), { path: '/slow', methods: ['GET'], upstream: slowUrl }] }
  const { app, call, reload } = await gateway(t, base)
  t.equal((await call('/echo/1')).statusCode, 200)
  // (The upstream objects are internal: watched through their metrics below.)
  const kept = app.macgate.metrics.registry
  const inFlight = call('/slow')
  while (waiting.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
  // The slow route goes; /echo/* stays on the same upstream.
  const answer = await reload({ ...base, routes: base.routes.filter((route) => route.path !== '/slow') })
  t.same(answer, { result: 'applied', changed: ['routes'], needsRestart: [] })
  t.same((await call('/slow')).json(), NO_SUCH_API, 'new requests see the route gone')
  waiting[0]!.setHeader('content-type', 'application/json')
  waiting[0]!.end('{"result":"ok","code":0}')
  const finished = await inFlight
  t.equal(finished.statusCode, 200, 'the request that started before the reload finishes on its route and upstream')
  t.equal((await call('/echo/2')).statusCode, 200)
  const metrics = parseMetrics(await kept.metrics())
  t.equal(metrics.sum('macgate_upstream_requests_total', { upstream: fast.url }), 2, 'the kept upstream\'s count goes on: the same pool')
  t.equal(fast.requests.at(-1)!.socket, fast.requests[0]!.socket, 'over the same keep-alive connection')
  t.equal(metrics.sum('macgate_upstream_requests_total', { upstream: slowUrl }), 0, 'the dropped upstream is gone from the metrics')
})
