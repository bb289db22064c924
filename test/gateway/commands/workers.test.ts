// `macgate start --workers N` as an operator runs it: N processes on one port, one Redis.
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { request } from 'node:http'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import t from 'tap'
import { signRequest } from '../../../plugin/client/index.ts'
import { addClient } from '../../helpers/app.ts'
import { cli, cliEnv, spawnCli } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { codeExchange, eventually, issueTokens, liveGateway, tokenRequest } from '../../helpers/live.ts'
import { freePort, startRedis } from '../../helpers/redis.ts'
import { parseMetrics } from '../../helpers/metrics-text.ts'

const redis = await startRedis(t)
const secret = randomBytes(32).toString('base64url')

/** A signed GET on a connection of its own, so that node:cluster hands each to the next worker. */
async function freshCall (port: number, tokens: { access_token: string, mac_key: string }): Promise<{ status: number, body: string }> {
  const url = `http://127.0.0.1:${port}/user/profile`
  const authorization = signRequest({ method: 'GET', url, accessToken: tokens.access_token, macKey: tokens.mac_key })
  const req = request(url, { agent: false, headers: { authorization, connection: 'close' } }).end()
  const [response] = await once(req, 'response') as [import('node:http').IncomingMessage]
  let body = ''
  for await (const chunk of response) body += String(chunk)
  return { status: response.statusCode!, body }
}

async function childPids (pid: number): Promise<number[]> {
  const { stdout } = await promisify(execFile)('ps', ['-o', 'pid=', '--ppid', String(pid)]).catch(() => ({ stdout: '' }))
  return stdout.split('\n').map((line) => Number(line.trim())).filter((one) => one > 0)
}

t.test('two workers: signed calls succeed, a revocation reaches both, a dead worker is replaced, SIGTERM drains all', async (t) => {
  const [port, adminPort] = [await freePort(), await freePort()]
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix, MACGATE_SECRET: secret, PORT: String(port), ADMIN_PORT: String(adminPort), LOG_LEVEL: 'warn' })
  const child = spawnCli(['start', '--workers', '2'], env)
  let output = ''
  child.stdout!.on('data', (chunk) => { output += String(chunk) })
  child.stderr!.on('data', (chunk) => { output += String(chunk) })
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  t.ok(await eventually(async () => output.includes('2 workers serving'), 30_000, 100), 'both workers listen')
  const workers = await childPids(child.pid!)
  t.equal(workers.length, 2, 'two worker processes')

  // Tokens through a gateway of the test's own on the same Redis and secret.
  const local = await liveGateway(t, redis, secret)
  const { clientId, clientSecret } = await addClient(local.store)
  const { code, tokens } = await issueTokens(local, clientId, clientSecret)
  const warm = await Promise.all(Array.from({ length: 10 }, async () => await freshCall(port, tokens)))
  t.strictSame(warm.map(({ status }) => status), Array(10).fill(200), 'signed calls succeed on every worker (connections alternate between them)')

  // The primary's admin listener: every worker's metrics summed, and the admin API on the shared store.
  const metrics = parseMetrics(await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text())
  t.equal(metrics.sum('macgate_verifications_total', { outcome: 'ok' }), 10, 'the ten verified calls, summed over both workers')
  t.ok(metrics.has('macgate_process_cpu_user_seconds_total'), 'with the workers\' process metrics')
  const listed = await (await fetch(`http://127.0.0.1:${adminPort}/admin/clients`)).json() as Array<{ client_id: string }>
  t.ok(listed.some((client) => client.client_id === clientId), 'the admin API reads the shared store')

  // Revoked by a code replay elsewhere: each worker holds the token in its cache, and must drop it.
  const since = Date.now()
  t.equal((await tokenRequest(local.origin, codeExchange(clientId, clientSecret, code))).status, 400)
  t.ok(await eventually(async () => (await freshCall(port, tokens)).status === 401, 1000, 5), 'a worker refuses it')
  const elapsed = Date.now() - since
  const after = await Promise.all(Array.from({ length: 10 }, async () => await freshCall(port, tokens)))
  t.strictSame(after.map(({ status }) => status), Array(10).fill(401), `then every worker refuses it (first refusal ${elapsed} ms after the replay)`)

  // A worker that dies is replaced.
  process.kill(workers[0]!, 'SIGKILL')
  t.ok(await eventually(async () => {
    const now = await childPids(child.pid!)
    return now.length === 2 && !now.includes(workers[0]!)
  }, 10_000, 100), 'the primary started another worker')
  const { tokens: fresh } = await issueTokens(local, clientId, clientSecret)
  t.ok(await eventually(async () => (await Promise.all([1, 2, 3, 4].map(async () => (await freshCall(port, fresh)).status)))
    .every((status) => status === 200), 10_000, 100), 'both workers serve again')

  const current = await childPids(child.pid!)
  child.kill('SIGTERM')
  const [exitCode] = await exited
  t.equal(exitCode, 0, 'the primary exits 0 after SIGTERM')
  t.strictSame((await Promise.all(current.map(async (pid) => await childPids(pid).then(() => {
    try { process.kill(pid, 0); return pid } catch { return 0 }
  })))).filter((pid) => pid !== 0), [], 'no worker is left running')
  t.notMatch(output, /"level":(50|60)/, 'no error logged')
})

t.test('workers are refused without a shared store, and for a bad count', async (t) => {
  const embedded = await runInProcess(['start', '--workers', '2'], cliEnv({ PORT: '0' }))
  t.equal(embedded.code, 2)
  t.match(embedded.stderr, /--workers needs REDIS_URL or REDIS_CLUSTER_NODES/)
  for (const value of ['0', '1.5']) {
    const bad = await runInProcess(['start', '--workers', value], cliEnv({ REDIS_URL: redis.url }))
    t.equal(bad.code, 2, `--workers ${value}`)
    t.match(bad.stderr, `--workers must be a whole number from 1 to 256, or auto, not ${value}`)
  }
  const fromEnv = await runInProcess(['start'], cliEnv({ MACGATE_WORKERS: 'x' }))
  t.equal(fromEnv.stderr, 'macgate: MACGATE_WORKERS must be a whole number from 1 to 256, or auto, not x\n', 'MACGATE_WORKERS is read too, and named (no usage hint: the command line was right)')
})

t.test('a busy port ends the start of every worker at once, with the port named', async (t) => {
  const busy = await liveGateway(t, redis, secret)
  const port = new URL(busy.origin).port
  const run = await cli(['start', '--workers', 'auto'], cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix, PORT: port }), { timeout: 30_000 })
  t.equal(run.killed, false, `exited by itself in ${run.ms} ms`)
  t.equal(run.code, 2)
  t.match(run.stderr, `cannot listen on 127.0.0.1:${port}: EADDRINUSE`)
})
