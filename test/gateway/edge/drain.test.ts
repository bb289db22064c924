// Draining in process (drain.ts): readiness turns 503 at once, and a request still running after
// drainMs has its connection cut so that the stop cannot hang. The whole SIGTERM path of a real
// `macgate start` is in test/reload-load.test.ts.
import { createServer, request as httpRequest, type ServerResponse } from 'node:http'
import t from 'tap'
import { buildGateway, drainAndClose, parseConfig } from '../../../gateway/index.ts'
import { MemoryStore } from '../../../plugin/index.ts'
import { signRequest } from '../../../plugin/client/index.ts'
import { liveToken } from '../../helpers/gateway.ts'
import { memoryLog } from '../../helpers/memory-log.ts'
import { listenOnLoopback } from '../../helpers/listen.ts'

t.test('a request still running after drainMs is cut, and the close completes', async (t) => {
  const waiting: ServerResponse[] = []
  const hung = createServer((_request, response) => { waiting.push(response) })
  const hungUrl = await listenOnLoopback(t, hung)
  const log = memoryLog()
  const store = new MemoryStore()
  t.teardown(async () => await store.close())
  const config = parseConfig({ upstream: hungUrl, routes: [{ path: '/hang' }], drainMs: 300 })
  const app = await buildGateway({ store, config, logger: { level: 'info', stream: log.stream } })
  const origin = await app.listen({ port: 0, host: '127.0.0.1' })
  const token = await liveToken(app)
  t.equal((await app.inject('/health/ready')).statusCode, 200)

  const url = `${origin}/hang`
  const call = httpRequest(url, { headers: { authorization: signRequest({ method: 'GET', url, accessToken: token.accessToken, macKey: token.macKey }) } }).end()
  const outcome = new Promise<string>((resolve) => {
    call.on('response', (response) => { resolve(`answered ${response.statusCode}`) })
    call.on('error', (error) => { resolve((error as NodeJS.ErrnoException).code ?? error.message) })
  })
  while (waiting.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))

  const started = Date.now()
  const closing = drainAndClose(app, { drainDelayMs: 0, drainMs: config.drainMs })
  const ready = await app.inject('/health/ready')
  t.same([ready.statusCode, ready.json()], [503, { status: 'draining' }], 'readiness 503 at once')
  await closing
  const took = Date.now() - started
  t.ok(took >= 250 && took < 5000, `closed once drainMs had passed (${took} ms)`)
  t.equal(await outcome, 'ECONNRESET', 'the hung request\'s connection was cut')
  t.ok(log.lines.some((line) => line.level === 40 && line.msg === 'requests still in flight after drainMs: their connections are cut'), 'said at warn')
})
