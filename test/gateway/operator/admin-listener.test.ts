// `macgate start`'s admin listener as an operator runs it (a subprocess, the embedded store): the
// metrics and probes on a port of their own, the bearer token, and the starts it refuses. The two
// gateways start side by side at once (each takes seconds to load the TypeScript sources); the
// refused starts run in-process (helpers/in-process.ts).
import { once } from 'node:events'
import { connect, createServer } from 'node:net'
import type { ChildProcess } from 'node:child_process'
import t, { type Test } from 'tap'
import { cliEnv, spawnCli } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { eventually } from '../../helpers/live.ts'
import { parseMetrics } from '../../helpers/metrics-text.ts'
import { freePort } from '../../helpers/redis.ts'

interface Started {
  child: ChildProcess
  /** `http://127.0.0.1:PORT` of the public listener. */
  origin: string
  /** Where the admin listener is reached (on 127.0.0.1 whatever it bound). */
  admin: string
  /** The log line that announced it. */
  line: Record<string, unknown>
  output: () => string
  exited: Promise<[number | null, NodeJS.Signals | null]>
}

/** Starts `macgate start` with `extra` in its environment; resolves once the admin listener is announced. */
async function start (t: Test, extra: Record<string, string>): Promise<Started> {
  const port = await freePort()
  const child = spawnCli(['start'], cliEnv({ PORT: String(port), LOG_LEVEL: 'info', ...extra }))
  let output = ''
  child.stdout!.on('data', (chunk) => { output += String(chunk) })
  child.stderr!.on('data', (chunk) => { output += String(chunk) })
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
    await exited
    clearTimeout(timer)
  })
  let line: Record<string, unknown> | undefined
  const announced = await eventually(async () => {
    for (const text of output.split('\n')) {
      if (!text.startsWith('{')) continue
      const parsed = JSON.parse(text) as Record<string, unknown>
      if (parsed.msg === 'admin listener') line = parsed
    }
    // An exit ends the wait (a throw here would only count as "not yet").
    return line !== undefined || child.exitCode !== null || child.signalCode !== null
  }, 60_000, 100)
  if (!announced || line === undefined) throw new Error(`no admin listener line (exit ${child.exitCode ?? child.signalCode ?? 'none'}): ${JSON.stringify(output)}`)
  const adminPort = new URL(String(line.admin)).port
  return { child, origin: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}`, line, output: () => output, exited }
}

const token = 'admin-token-for-the-test-0123456789'
const starts = { plain: start(t, {}), token: start(t, { MACGATE_ADMIN_TOKEN: token, ADMIN_HOST: '0.0.0.0' }) }
// Each is awaited by its test; until then a failed start is not an unhandled rejection.
for (const started of Object.values(starts)) started.catch(() => {})

t.test('without a token, on loopback: metrics (the plugin\'s and the process\'s) and probes; none of it on the public port', async (t) => {
  const gateway = await starts.plain
  t.match(gateway.line, { admin: /^http:\/\/127\.0\.0\.1:\d+$/, token: false }, 'announced on 127.0.0.1, the port it took')
  t.not(new URL(String(gateway.line.admin)).port, '0', 'the actual port, not 0')

  // One refusal on the public port, to be read back from the admin listener.
  const refused = await fetch(`${gateway.origin}/user/profile`)
  t.equal(refused.status, 401)

  const metrics = await fetch(`${gateway.admin}/metrics`)
  t.equal(metrics.status, 200)
  t.match(metrics.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  const m = parseMetrics(await metrics.text())
  t.equal(m.types.get('macgate_verifications_total'), 'counter')
  t.equal(m.value('macgate_verifications_total', { outcome: 'malformed_header' }), 1, 'the public port\'s refusal, counted')
  t.equal(m.value('macgate_verifications_total', { outcome: 'ok' }), 0)
  t.ok(m.has('macgate_process_cpu_user_seconds_total'), 'Node\'s default metrics, prefixed macgate_')
  t.ok(m.has('macgate_nodejs_eventloop_lag_seconds'), 'event loop lag')
  t.ok(m.has('macgate_request_duration_seconds_count'), 'the request histogram')
  t.strictSame(m.samples.filter((sample) => !sample.name.startsWith('macgate_')).map((sample) => sample.name), [], 'every name prefixed macgate_')

  for (const path of ['/health/live', '/health/ready']) {
    const response = await fetch(`${gateway.admin}${path}`)
    t.equal(response.status, 200, `admin ${path}`)
  }
  const ready = await fetch(`${gateway.admin}/health/ready`)
  t.equal(ready.headers.get('cache-control'), 'no-store', 'answered as on the public port: never cached')
  t.match(await ready.json(), { status: 'ready', store: { kind: 'memory', status: 'up' } })

  const publicMetrics = await fetch(`${gateway.origin}/metrics`)
  t.equal(publicMetrics.status, 404, 'the public port does not serve /metrics')
  t.notMatch(await publicMetrics.text(), /macgate_verifications_total/)

  gateway.child.kill('SIGTERM')
  const [code] = await gateway.exited
  t.equal(code, 0, 'SIGTERM: exit 0')
  await t.rejects(fetch(`${gateway.admin}/health/live`), 'the admin listener closed with it')
})

t.test('MACGATE_ADMIN_TOKEN: a bearer for every admin request; with it, a non-loopback ADMIN_HOST is allowed', async (t) => {
  const gateway = await starts.token
  t.match(gateway.line, { admin: /^http:\/\/0\.0\.0\.0:\d+$/, token: true })
  t.notOk(gateway.output().includes(token), 'the token itself is not logged')

  for (const path of ['/metrics', '/health/ready', '/health/live']) {
    const none = await fetch(`${gateway.admin}${path}`)
    t.equal(none.status, 401, `${path}: no Authorization`)
    t.equal(none.headers.get('www-authenticate'), 'Bearer realm="macgate-admin"', `${path}: WWW-Authenticate`)
    t.notMatch(await none.text(), /macgate_/, `${path}: nothing of the metrics`)
    for (const wrong of [`Bearer ${token}x`, 'Bearer wrong', 'Bearer ', `Basic ${token}`, token, `bearer ${token}`]) {
      const response = await fetch(`${gateway.admin}${path}`, { headers: { authorization: wrong } })
      t.equal(response.status, 401, `${path}: "${wrong.replace(token, '<token>')}"`)
    }
    const right = await fetch(`${gateway.admin}${path}`, { headers: { authorization: `Bearer ${token}` } })
    t.equal(right.status, 200, `${path}: the right token`)
    if (path === '/metrics') t.ok(parseMetrics(await right.text()).has('macgate_verifications_total'))
  }
})

/** Whether anything accepts connections on 127.0.0.1:`port`. */
async function listening (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' })
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(false) })
  })
}

t.test('ADMIN_HOST not loopback without a token: refused before anything starts', async (t) => {
  const port = await freePort()
  const run = await runInProcess(['start'], cliEnv({ PORT: String(port), ADMIN_HOST: '0.0.0.0' }))
  t.equal(run.code, 2)
  t.match(run.stderr, /MACGATE_ADMIN_TOKEN/, 'names MACGATE_ADMIN_TOKEN')
  t.match(run.stderr, /0\.0\.0\.0/, 'names the host')
  t.equal(await listening(port), false, 'the public port was never opened')
})

t.test('a busy ADMIN_PORT ends the start, naming host and port', async (t) => {
  const holder = createServer().listen(0, '127.0.0.1')
  await once(holder, 'listening')
  t.teardown(() => { holder.close() })
  const { port } = holder.address() as { port: number }
  const publicPort = await freePort()
  const run = await runInProcess(['start'], cliEnv({ PORT: String(publicPort), ADMIN_PORT: String(port), LOG_LEVEL: 'silent' }))
  t.equal(run.code, 2, 'an operator\'s mistake: exit 2')
  t.match(run.stderr, `127.0.0.1:${port}`, 'names host:port')
  t.match(run.stderr, /EADDRINUSE/)
  t.equal(run.stdout, '', 'no demo banner for a start that failed')
  t.equal(await listening(publicPort), false, 'the public listener it had opened is closed again')
})
