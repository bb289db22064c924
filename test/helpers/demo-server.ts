// `macgate start` as an operator first runs it: a process on the embedded store, with its demo, on
// a free port, watched until its banner has printed what the test reads from it.
import { once } from 'node:events'
import type { ChildProcess } from 'node:child_process'
import type { Test } from 'tap'
import { freePort } from './redis.ts'
import { spawnSource } from './source.ts'

export interface DemoServer {
  origin: string
  process: ChildProcess
  exited: Promise<[number | null, NodeJS.Signals | null]>
  /** What it has printed so far. */
  output: { stdout: string, stderr: string }
  /** `banner`'s match in stdout; undefined when it exited or 20 s passed first. */
  banner: RegExpExecArray | undefined
}

/** Starts it with none of the environment's store, secret or upstream; SIGTERMed when the test ends. */
export async function startDemoServer (t: Test, banner: RegExp): Promise<DemoServer> {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), LOG_LEVEL: 'warn', ADMIN_PORT: '0' }
  for (const name of ['REDIS_URL', 'MACGATE_REDIS_PREFIX', 'MACGATE_SECRET', 'MACGATE_UPSTREAM', 'HOST', 'NODE_OPTIONS']) delete env[name]
  const server = spawnSource('gateway/cli.ts', ['start'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = once(server, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  t.teardown(async () => {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM')
      await exited
    }
  })
  const output = { stdout: '', stderr: '' }
  server.stderr!.on('data', (chunk) => { output.stderr += String(chunk) })
  const found = await new Promise<RegExpExecArray | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), 20_000)
    server.stdout!.on('data', (chunk) => {
      output.stdout += String(chunk)
      const match = banner.exec(output.stdout)
      if (match !== null) { clearTimeout(timer); resolve(match) }
    })
    server.once('exit', () => { clearTimeout(timer); resolve(undefined) })
  })
  return { origin: `http://127.0.0.1:${port}`, process: server, exited, output, banner: found }
}
