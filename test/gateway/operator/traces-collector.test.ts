// A collector that hangs or is not there costs no request anything: spans queue, are dropped when
// the queue is full, counted, and warned about once a minute. And the CLI: tracing on from the
// environment alone, refused at start for what it cannot do.
import t from 'tap'
import { tracingRefusal, tracingWanted } from '../../../gateway/index.ts'
import { signedInject } from '../../helpers/gateway.ts'
import { tracedGateway } from '../../helpers/traced-gateway.ts'
import { startOtlpReceiver } from '../../helpers/otlp-receiver.ts'
import { cliEnv, spawnCli } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { freePort } from '../../helpers/redis.ts'
import { eventually } from '../../helpers/live.ts'
import { once } from 'node:events'

const hung = await startOtlpReceiver(t, { hang: true })
// The hung export is given up within a second, so that the test's process can end.
const { app, log, tokens } = await tracedGateway(t, {
  OTEL_EXPORTER_OTLP_ENDPOINT: hung.url,
  OTEL_BSP_SCHEDULE_DELAY: '10',
  OTEL_BSP_MAX_QUEUE_SIZE: '8',
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4',
  OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
  OTEL_BSP_EXPORT_TIMEOUT: '1000'
})

t.test('a hung collector: every request answered at once, spans past the queue dropped, counted, one warning', async (t) => {
  const slowest = { ms: 0 }
  for (let i = 0; i < 40; i++) {
    const started = performance.now()
    const answer = await signedInject(app, { url: `/echo/${i}`, token: tokens.accessToken, macKey: tokens.macKey })
    slowest.ms = Math.max(slowest.ms, performance.now() - started)
    t.equal(answer.statusCode, 200)
  }
  t.ok(slowest.ms < 2000, `no request waited for the collector (slowest ${Math.round(slowest.ms)} ms)`)
  const metric = await app.macgate.metrics.registry.getSingleMetricAsString('macgate_trace_spans_dropped_total')
  const dropped = Number(/reason="queue_full"} (\d+)/.exec(metric)?.[1] ?? 0)
  t.ok(dropped > 0, `spans dropped with the queue full: ${dropped}`)
  const warnings = log.lines.filter((line) => String(line.msg).startsWith('trace spans dropped'))
  t.equal(warnings.length, 1, 'one warning, however many were dropped')
  t.match(warnings[0], { level: 40, reason: 'queue_full' })
})

t.test('the CLI refuses at start what tracing cannot do, and says why', async (t) => {
  const grpc = await runInProcess(['start'], cliEnv({ PORT: '0', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }))
  t.equal(grpc.code, 2)
  t.match(grpc.stderr, /OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported.*http\/protobuf/)
  const zipkin = await runInProcess(['start'], cliEnv({ PORT: '0', OTEL_TRACES_EXPORTER: 'zipkin' }))
  t.equal(zipkin.code, 2)
  t.match(zipkin.stderr, /OTEL_TRACES_EXPORTER=zipkin/)
  t.match(tracingRefusal({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/xml' }), /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http\/xml: use http\/protobuf/)
  t.equal(tracingRefusal({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), undefined)
})

t.test('on only when the environment asks', async (t) => {
  t.notOk(tracingWanted({}), 'nothing set: off (not the SDK\'s default otlp)')
  t.ok(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }), 'a traces endpoint')
  t.ok(tracingWanted({ OTEL_TRACES_EXPORTER: 'console' }), 'an exporter named')
  t.notOk(tracingWanted({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), 'none')
  t.notOk(tracingWanted({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), 'the SDK disabled')
  t.notOk(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }), 'a blank endpoint')
})

t.test('macgate start with an endpoint where nothing listens: traced, and every request answered', async (t) => {
  const port = await freePort()
  const nowhere = await freePort()
  const child = spawnCli(['start'], cliEnv({ PORT: String(port), LOG_LEVEL: 'info', OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${nowhere}`, OTEL_BSP_SCHEDULE_DELAY: '10' }))
  let output = ''
  child.stdout!.on('data', (chunk) => { output += String(chunk) })
  child.stderr!.on('data', (chunk) => { output += String(chunk) })
  const exited = once(child, 'exit')
  t.teardown(async () => {
    if (child.exitCode !== null) return
    child.kill('SIGTERM')
    await exited
  })
  const origin = `http://127.0.0.1:${port}`
  t.ok(await eventually(async () => (await fetch(`${origin}/health/live`).catch(() => undefined))?.status === 200, 60_000), `started: ${output}`)
  for (let i = 0; i < 20; i++) t.equal((await fetch(`${origin}/user/profile`)).status, 401, 'answered')
  t.ok(await eventually(async () => output.includes('"trace_id"'), 5000), 'its access lines carry trace ids: tracing is on')
  child.kill('SIGTERM')
  const [code] = await exited as [number | null]
  t.equal(code, 0, 'and it stops cleanly')
})
