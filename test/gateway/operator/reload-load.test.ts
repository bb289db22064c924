// Reloads and drains of a real `macgate start` (one process, and `--workers 2`) under signed load:
// repeated SIGHUPs swapping upstream pools and timeouts while keep-alive connections run requests;
// every non-2xx and every connection error is counted, and must be none.
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, request as httpRequest, type ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Pool } from 'undici'
import t, { type Test } from 'tap'
import { signRequest } from '../../../plugin/client/index.ts'
import { addClient } from '../../helpers/app.ts'
import { cliEnv, spawnCli } from '../../helpers/cli.ts'
import { eventually, issueTokens, liveGateway } from '../../helpers/live.ts'
import { parseMetrics } from '../../helpers/metrics-text.ts'
import { freePort, startRedis } from '../../helpers/redis.ts'
import { listenOnLoopback } from '../../helpers/listen.ts'

const redis = await startRedis(t)
const secret = randomBytes(32).toString('base64url')
const directory = await mkdtemp(join(tmpdir(), 'macgate-reload-'))
t.teardown(async () => await rm(directory, { recursive: true, force: true }))

const local = await liveGateway(t, redis, secret)
const { clientId, clientSecret } = await addClient(local.store)
const { tokens } = await issueTokens(local, clientId, clientSecret)

const SAMPLE = [
  { path: '/user/profile', methods: ['GET'], scopes: ['1'] },
  { path: '/user/phoneAndEmail', methods: ['GET'], scopes: ['4', '6'], match: 'any' }
]
/** Two configs a reload goes back and forth between: each makes every upstream pool anew. */
const VARIANTS = [
  { routes: SAMPLE, upstreamPool: { connections: 32 }, timeouts: { headersMs: 20_000 } },
  { routes: SAMPLE, upstreamPool: { connections: 16 }, timeouts: { headersMs: 25_000 } }
]

/** SIGHUPs under load, each once the one before has been logged. */
const RELOADS = 8

interface Started { pid: number, port: number, adminPort: number, output: () => string, exited: Promise<[number | null, NodeJS.Signals | null]> }

async function start (t: Test, file: string, extra: string[] = [], env: Record<string, string> = {}): Promise<Started> {
  const [port, adminPort] = [await freePort(), await freePort()]
  const child = spawnCli(['start', '--config', file, ...extra], cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix, MACGATE_SECRET: secret, PORT: String(port), ADMIN_PORT: String(adminPort), LOG_LEVEL: 'info', ...env }))
  let output = ''
  child.stdout!.on('data', (chunk) => { output += String(chunk) })
  child.stderr!.on('data', (chunk) => { output += String(chunk) })
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const ready = await eventually(async () => (await fetch(`http://127.0.0.1:${port}/health/ready`)).status === 200 &&
    (extra.length === 0 || output.includes('workers serving')), 60_000, 200)
  if (!ready) throw new Error(`macgate start did not get ready: ${output}`)
  return { pid: child.pid!, port, adminPort, output: () => output, exited }
}

function reloadsLogged (output: string): number {
  return output.split('\n').filter((line) => line.includes('"msg":"config reloaded"')).length
}

/** `loops` callers, each its own keep-alive connection, signing every request, until `done` settles. */
async function signedLoad (port: number, path: string, done: Promise<unknown>, loops = 8): Promise<{ ok: number, statuses: Record<string, number>, errors: string[] }> {
  const origin = `http://127.0.0.1:${port}`
  const pool = new Pool(origin, { connections: loops, pipelining: 1 })
  const statuses: Record<string, number> = {}
  const errors: string[] = []
  let ok = 0
  let running = true
  void done.finally(() => { running = false })
  await Promise.all(Array.from({ length: loops }, async () => {
    // eslint-disable-next-line no-unmodified-loop-condition -- `done` clears `running` while the callers await
    while (running) {
      const authorization = signRequest({ method: 'GET', url: `${origin}${path}`, accessToken: tokens.access_token, macKey: tokens.mac_key })
      try {
        const { statusCode, body } = await pool.request({ method: 'GET', path, headers: { authorization } })
        await body.text()
        if (statusCode >= 200 && statusCode < 300) ok++
        else statuses[statusCode] = (statuses[statusCode] ?? 0) + 1
      } catch (error) {
        errors.push((error as Error).message)
      }
    }
  }))
  await pool.close()
  return { ok, statuses, errors }
}

async function signedStatus (port: number, path: string): Promise<number> {
  const url = `http://127.0.0.1:${port}${path}`
  const authorization = signRequest({ method: 'GET', url, accessToken: tokens.access_token, macKey: tokens.mac_key })
  return (await fetch(url, { headers: { authorization } })).status
}

for (const workers of [1, 2]) {
  t.test(`reloads under load lose nothing: ${workers === 1 ? 'one process' : 'two workers'}`, async (t) => {
    const file = join(directory, `gateway-${workers}.json`)
    await writeFile(file, JSON.stringify(VARIANTS[0]))
    const gateway = await start(t, file, workers === 1 ? [] : ['--workers', String(workers)])
    // One SIGHUP after the other has been logged by every worker (signals sent closer could merge into one).
    // The load runs for as long as the reloads take.
    let sighups = 0
    let allLogged = true
    const reloading = (async () => {
      while (sighups < RELOADS) {
        await writeFile(file, JSON.stringify(VARIANTS[++sighups % 2]))
        process.kill(gateway.pid, 'SIGHUP')
        allLogged &&= await eventually(async () => reloadsLogged(gateway.output()) >= sighups * workers, 10_000, 10)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    })()
    const answers = await signedLoad(gateway.port, '/user/profile', reloading)
    await reloading
    t.ok(allLogged, `every worker logged every reload (${sighups} SIGHUPs)`)
    t.same({ statuses: answers.statuses, errors: answers.errors }, { statuses: {}, errors: [] }, `${answers.ok} signed requests across ${sighups} reloads: no non-2xx, no connection error`)
    // The machine is shared: a floor that says requests ran between the reloads, not a throughput.
    t.ok(answers.ok >= 2 * sighups, 'requests ran throughout')

    // A route added: answers from the first request after `config reloaded`.
    t.equal(await signedStatus(gateway.port, '/user/openidV2'), 404, 'no such route yet')
    const before = reloadsLogged(gateway.output())
    await writeFile(file, JSON.stringify({ ...VARIANTS[0], routes: [...SAMPLE, { path: '/user/openidV2', methods: ['GET'], scopes: ['3'] }] }))
    process.kill(gateway.pid, 'SIGHUP')
    t.ok(await eventually(async () => reloadsLogged(gateway.output()) >= before + workers, 10_000, 5))
    const added = await Promise.all(Array.from({ length: 4 }, async () => await signedStatus(gateway.port, '/user/openidV2')))
    t.same(added, [200, 200, 200, 200], 'the added route answers at once (on every worker)')

    // The admin listener: a bad file refused naming the field, the running config serving on.
    const admin = `http://127.0.0.1:${gateway.adminPort}/admin/reload`
    await writeFile(file, JSON.stringify({ routes: [{ path: 'user/profile' }] }))
    const refused = await fetch(admin, { method: 'POST' })
    t.equal(refused.status, 400)
    t.match(await refused.json(), { result: 'refused', error: /config\.routes\[0\]\.path must match pattern/ })
    t.equal(await signedStatus(gateway.port, '/user/openidV2'), 200, 'the old config still serves')
    if (workers === 1) {
      process.kill(gateway.pid, 'SIGHUP')
      t.ok(await eventually(async () => gateway.output().includes('"msg":"config refused; the running config stays"'), 10_000, 20), 'SIGHUP with a bad file: refused at error')
    }
    await writeFile(file, JSON.stringify({ ...VARIANTS[1], trustProxy: ['10.0.0.0/8'], issuer: 'https://id.example.com' }))
    const applied = await fetch(admin, { method: 'POST' })
    t.equal(applied.status, 200)
    const body = await applied.json() as Record<string, unknown>
    const expected = { result: 'applied', changed: ['routes', 'timeouts', 'upstreamPool'], needsRestart: ['issuer', 'trustProxy'] }
    if (workers === 1) t.same(body, expected, 'what changed, and what needs a restart')
    else t.match(body, { result: 'applied', workers: [expected, expected] }, 'each worker\'s answer')
    t.equal(await signedStatus(gateway.port, '/user/openidV2'), 404, 'the route gone again')
    const metrics = parseMetrics(await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text())
    t.ok(metrics.sum('macgate_config_reloads_total', { result: 'applied' }) >= (sighups + 2) * workers, 'reloads counted (summed over workers)')
    // Under workers the primary refused the bad file before asking any worker.
    t.equal(metrics.sum('macgate_config_reloads_total', { result: 'refused' }), workers === 1 ? 2 : 0, 'the refusals counted where they were made')

    process.kill(gateway.pid, 'SIGTERM')
    const [code] = await gateway.exited
    t.equal(code, 0, 'exits 0 on SIGTERM')
  })
}

t.test('SIGTERM drains: readiness 503 at once, serving for drainDelayMs, the slow request in flight finished', async (t) => {
  const waiting: ServerResponse[] = []
  const slow = createServer((request, response) => {
    if (request.url === '/fast') return response.end('{"result":"ok"}')
    waiting.push(response)
  })
  const upstream = await listenOnLoopback(t, slow)
  const file = join(directory, 'drain.json')
  await writeFile(file, JSON.stringify({ upstream, routes: [{ path: '/slow' }, { path: '/fast' }], drainDelayMs: 600, drainMs: 10_000 }))
  const gateway = await start(t, file)
  // An idle keep-alive connection, open before the signal: closed politely (its socket ends, no request lost).
  const idle = httpRequest({ port: gateway.port, host: '127.0.0.1', path: '/health/live', agent: false, headers: { connection: 'keep-alive' } }).end()
  const [idleResponse] = await once(idle, 'response') as [import('node:http').IncomingMessage]
  idleResponse.resume()
  const idleClosed = once(idle.socket!, 'close')

  const inFlight = signedStatus(gateway.port, '/slow')
  t.ok(await eventually(async () => waiting.length === 1, 10_000, 10), 'the slow request reached the upstream')
  const signalled = Date.now()
  process.kill(gateway.pid, 'SIGTERM')
  t.ok(await eventually(async () => (await fetch(`http://127.0.0.1:${gateway.port}/health/ready`)).status === 503, 500, 10), 'readiness 503 at once')
  const ready = await fetch(`http://127.0.0.1:${gateway.port}/health/ready`)
  t.same([ready.status, await ready.json()], [503, { status: 'draining' }])
  t.equal(await signedStatus(gateway.port, '/fast'), 200, 'still serving during drainDelayMs')
  t.ok(Date.now() - signalled < 600)
  // Past the delay the port closes; the slow request is still running.
  t.ok(await eventually(async () => await fetch(`http://127.0.0.1:${gateway.port}/health/live`).then(() => false, () => true), 5000, 50), 'then the listener closes')
  await idleClosed
  t.pass('the idle keep-alive connection was closed')
  waiting[0]!.setHeader('content-type', 'application/json')
  waiting[0]!.end('{"result":"ok","code":0}')
  t.equal(await inFlight, 200, 'the request in flight finished')
  const [code] = await gateway.exited
  t.equal(code, 0, 'and the process exits 0')
  t.match(gateway.output(), /"msg":"shutting down"/, 'having said it was shutting down')
  t.notMatch(gateway.output(), /"level":(50|60)/, 'no error logged')
})
