// The `macgate` command as operators run it: a subprocess on the TypeScript sources.
import { once } from 'node:events'
import { spawnSource } from './source.ts'

export interface Run { code: number | null, stdout: string, stderr: string, ms: number, killed: boolean }

/** The test's environment without anything that would steer the CLI, plus `extra`. */
export function cliEnv (extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env }
  for (const name of ['REDIS_URL', 'MACGATE_REDIS_PREFIX', 'MACGATE_SECRET', 'PORT', 'HOST', 'NODE_OPTIONS', 'LOG_LEVEL', 'ADMIN_HOST', 'MACGATE_ADMIN_TOKEN']) delete env[name]
  // Tests run side by side: the admin listener takes a free port unless a test names one.
  return { ...env, ADMIN_PORT: '0', ...extra }
}

export function spawnCli (args: string[], env: NodeJS.ProcessEnv) {
  return spawnSource('gateway/cli.ts', args, { env, stdio: ['pipe', 'pipe', 'pipe'] })
}

/**
 * Runs one command to its end (killed after `timeout` ms, a guard against a hang: on a slow shared
 * machine several CLIs loading TypeScript at once take tens of seconds), feeding `input` on stdin.
 */
export async function cli (args: string[], env: NodeJS.ProcessEnv, { input = '', timeout = 60_000 } = {}): Promise<Run> {
  const started = Date.now()
  const child = spawnCli(args, env)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => { stdout += String(chunk) })
  child.stderr!.on('data', (chunk) => { stderr += String(chunk) })
  child.stdin!.end(input)
  let killed = false
  const timer = setTimeout(() => { killed = true; child.kill('SIGKILL') }, timeout)
  const [code] = await once(child, 'close') as [number | null]
  clearTimeout(timer)
  return { code, stdout, stderr, ms: Date.now() - started, killed }
}
