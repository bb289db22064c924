// `macgate start --workers 2` with an OTLP endpoint: each worker starts its own SDK and exports its
// own spans, told apart by its own service.instance.id.
import { once } from 'node:events'
import { request } from 'node:http'
import t from 'tap'
import { cliEnv, spawnCli } from '../../helpers/cli.ts'
import { eventually } from '../../helpers/live.ts'
import { startOtlpReceiver } from '../../helpers/otlp-receiver.ts'
import { freePort, startRedis } from '../../helpers/redis.ts'

/** A GET on a connection of its own, so that node:cluster hands each to the next worker. */
async function freshGet (url: string): Promise<number> {
  const req = request(url, { agent: false, headers: { connection: 'close' } }).end()
  const [response] = await once(req, 'response') as [import('node:http').IncomingMessage]
  response.resume()
  return response.statusCode!
}

t.test('two workers export their own spans, each with its own service.instance.id', async (t) => {
  const redis = await startRedis(t)
  const receiver = await startOtlpReceiver(t)
  const port = await freePort()
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix, PORT: String(port), LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '10' })
  const child = spawnCli(['start', '--workers', '2'], env)
  let output = ''
  child.stdout!.on('data', (chunk) => { output += String(chunk) })
  child.stderr!.on('data', (chunk) => { output += String(chunk) })
  const exited = once(child, 'exit') as Promise<[number | null]>
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  t.ok(await eventually(async () => output.includes('2 workers serving'), 60_000, 100), `both workers listen: ${output}`)
  for (let i = 0; i < 10; i++) t.equal(await freshGet(`http://127.0.0.1:${port}/health/live`), 200)
  const instances = (spans: typeof receiver.spans): Set<unknown> => new Set(spans.filter((span) => span.name === 'GET /health/live').map((span) => span.resource['service.instance.id']))
  await receiver.waitFor((spans) => instances(spans).size === 2, 20_000)
  t.equal(instances(receiver.spans).size, 2, 'two instance ids, one per worker')
  t.ok(receiver.spans.every((span) => span.resource['service.name'] === 'macgate'))
  child.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 0, 'drained and stopped')
})
