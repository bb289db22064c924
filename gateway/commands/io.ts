import type { LoadOutputs } from './load.ts'

/**
 * Where a command reads its settings and input and writes its output: the process's own by
 * default, or a caller's (the tests run commands in process with their own, side by side).
 */
export interface CommandIO extends LoadOutputs {
  env: NodeJS.ProcessEnv
  stdin: AsyncIterable<string | Uint8Array>
}

/** The process's environment and standard streams. */
export function processIO (): CommandIO {
  return { env: process.env, stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }
}
