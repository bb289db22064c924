// The `macgate` command run inside the test's process: the same dispatch (gateway/commands/main.ts)
// and the same stderr and exit code for a failure as the CLI's, without the seconds a subprocess
// takes to load the TypeScript sources. What only a process shows (that the exit code and stderr
// reach the shell, that it exits by itself) stays with the subprocess tests (helpers/cli.ts).
import { Readable } from 'node:stream'
import { failure, main } from '../../gateway/commands/main.ts'
import { capture } from './capture.ts'
import type { Run } from './cli.ts'

/**
 * Runs `macgate ARGV` with `env` as its environment and `input` on its stdin, its stdout and
 * stderr captured: main's own IO object, so runs may overlap each other and tap's output.
 * (`start` still logs to the process's descriptors, as pino writes there directly.)
 */
export async function runInProcess (argv: string[], env: NodeJS.ProcessEnv, { input = '' } = {}): Promise<Run> {
  const started = Date.now()
  const streams = capture()
  let code = 0
  try {
    await main(argv, { env, stdout: streams.stdout, stderr: streams.stderr, stdin: Readable.from([input]) })
  } catch (error) {
    const failed = failure(error)
    streams.out.stderr += failed.stderr
    code = failed.exitCode
  }
  return { code, stdout: streams.out.stdout, stderr: streams.out.stderr, ms: Date.now() - started, killed: false }
}
