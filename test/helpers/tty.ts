// A project command under a pseudo-terminal (util-linux `script`), to see what a person at a
// terminal sees: live lines redrawn with \r and escape codes.
import { execFile } from 'node:child_process'
import { ROOT } from './source.ts'

/** Single-quoted for sh. */
function quote (arg: string): string {
  return `'${arg.replaceAll("'", "'\\''")}'`
}

/** Runs `file args` under a terminal; resolves to everything the terminal showed, and the exit code. */
export async function runUnderTty (file: string, args: string[], env: NodeJS.ProcessEnv, timeout = 60_000): Promise<{ code: number, output: string }> {
  // Node strips the TypeScript types itself, as for the tests (helpers/source.ts).
  const command = [process.execPath, file, ...args].map(quote).join(' ')
  return await new Promise((resolve) => {
    execFile('script', ['-qfec', command, '/dev/null'], { cwd: ROOT, env, timeout, maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: stdout })
    })
  })
}
