// The ladder's rungs are the real gateway with a stand-in for each part a rung has off
// (bench/ladder-gateway.ts): each does what its rung says, and buildGateway checks every request as ever.
import t, { type Test } from 'tap'
import { buildGateway } from '../../gateway/index.ts'
import { MemoryStore } from '../../plugin/index.ts'
import { GATEWAY_STEPS, isGatewayStep, partsOf, tracingEnv, type GatewayStep } from '../../bench/rungs.ts'
import { buildLadderGateway } from '../../bench/ladder-gateway.ts'
import { API_HOST, recordingUpstream } from '../helpers/gateway.ts'

t.test('each rung has its own part and every part of the rungs below it', async (t) => {
  const on = (step: GatewayStep) => {
    const { hotPath, log, redis, tracing } = partsOf(step)
    return [hotPath.macCheck, hotPath.upstreamHeaders, hotPath.requestMetrics, log, redis, tracing]
  }
  t.same(GATEWAY_STEPS.map(on), [
    [false, false, false, false, false, 'off'],
    [true, false, false, false, false, 'off'],
    [true, true, false, false, false, 'off'],
    [true, true, true, false, false, 'off'],
    [true, true, true, true, false, 'off'],
    [true, true, true, true, true, 'off'],
    [true, true, true, true, true, 'ratio'],
    [true, true, true, true, true, 'all']
  ])
  t.same(tracingEnv('ratio', 'http://127.0.0.1:9'), { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' })
  t.match(tracingEnv('all', 'http://127.0.0.1:9'), { OTEL_TRACES_SAMPLER: 'parentbased_always_on' })
  t.ok(isGatewayStep('mac-check'))
  t.notOk(isGatewayStep('constructor'), 'only the steps themselves')
})

const ROUTES = [{ path: '/api/*', methods: ['GET'], scopes: ['1'], match: 'all' as const }]

async function gatewayFor (t: Test, step: GatewayStep) {
  const upstream = await recordingUpstream(t)
  const store = new MemoryStore()
  const app = await buildLadderGateway({ store, config: { upstream: upstream.url, routes: ROUTES } }, partsOf(step).hotPath)
  t.teardown(async () => { await app.close(); await store.close() })
  return { app, upstream }
}

const durations = async (app: Awaited<ReturnType<typeof buildGateway>>): Promise<boolean> =>
  /^macgate_request_duration_seconds_count\{/m.test(await app.macgate.metrics.registry.metrics())

t.test('the route-check rung: the route table still judges, nothing else is done', async (t) => {
  const { app, upstream } = await gatewayFor(t, 'route-check')
  const forwarded = await app.inject({ url: '/api/profile', headers: { host: API_HOST, authorization: 'MAC id="x", nonce="1:1", mac="m"' } })
  t.equal(forwarded.statusCode, 200, 'forwarded unchecked')
  t.equal(upstream.requests[0]!.headers.authorization, 'MAC id="x", nonce="1:1", mac="m"', 'headers as they came: the plain proxy\'s')
  t.notOk(Object.keys(upstream.requests[0]!.headers).some((name) => name.startsWith('x-macgate')), 'no identity headers')
  t.equal((await app.inject({ url: '/elsewhere', headers: { host: API_HOST } })).statusCode, 404, 'the route check is on')
  t.notOk(await durations(app), 'no request metrics')
})

t.test('the header-rewrite rung: the MAC check is on; every part is on by default', async (t) => {
  const { app, upstream } = await gatewayFor(t, 'header-rewrite')
  t.equal((await app.inject({ url: '/api/profile', headers: { host: API_HOST } })).statusCode, 401, 'unsigned: refused')
  t.equal(upstream.requests.length, 0)
  const store = new MemoryStore()
  const shipped = await buildGateway({ store, config: { upstream: upstream.url, routes: ROUTES } })
  t.teardown(async () => { await shipped.close(); await store.close() })
  t.equal((await shipped.inject({ url: '/api/profile', headers: { host: API_HOST } })).statusCode, 401, 'buildGateway: checked')
  t.ok(await durations(shipped), 'and timed')
})
