// The `macgate` command run inside the test's process: the same dispatch (gateway/commands/main.ts)
// and the same stderr and exit code for a failure as the CLI's, without the seconds a subprocess
// takes to load the TypeScript sources. What only a process shows (that the exit code and stderr
// reach the shell, that it exits by itself) stays with the subprocess tests (helpers/cli.ts).
import { Readable } from 'node:stream'
import { failure, main } from '../../gateway/commands/main.js'
import type { Run } from './cli.js'

/**
 * Runs `macgate ARGV` with `env` as process.env and `input` on stdin, its stdout captured. One at a
 * time (it swaps process globals): await each before the next. tap writes its own output to the
 * same stdout: no subtest may run meanwhile (make the subtests after the last run, or await them).
 */
export async function runInProcess (argv: string[], env: NodeJS.ProcessEnv, { input = '' } = {}): Promise<Run> {
  const started = Date.now()
  const saved = { env: process.env, write: process.stdout.write, stdin: Object.getOwnPropertyDescriptor(process, 'stdin')! }
  let stdout = ''
  let stderr = ''
  let code = 0
  process.env = env
  process.stdout.write = ((chunk: string | Uint8Array) => { stdout += String(chunk); return true }) as typeof process.stdout.write
  Object.defineProperty(process, 'stdin', { value: Readable.from([input]), configurable: true, enumerable: true })
  try {
    await main(argv)
  } catch (error) {
    ({ stderr, exitCode: code } = failure(error))
  } finally {
    process.env = saved.env
    process.stdout.write = saved.write
    Object.defineProperty(process, 'stdin', saved.stdin)
  }
  return { code, stdout, stderr, ms: Date.now() - started, killed: false }
}
