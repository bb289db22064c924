// A project command under a pseudo-terminal (util-linux `script`), to see what a person at a
// terminal sees: live lines redrawn with \r and escape codes.
import { execFile } from 'node:child_process'
import { ROOT } from './source.js'

/** Single-quoted for sh. */
function quote (arg: string): string {
  return `'${arg.replaceAll("'", "'\\''")}'`
}

/** The TypeScript loader this test runs with (tap's), or tsx on its own; as source.ts picks it. */
function loaderArgs (): string[] {
  const loader = process.execArgv.filter((arg) => arg.includes('@tapjs/typescript'))
  return loader.length > 0 ? loader : ['--import', 'tsx']
}

/** Runs `file args` under a terminal; resolves to everything the terminal showed, and the exit code. */
export async function runUnderTty (file: string, args: string[], env: NodeJS.ProcessEnv, timeout = 60_000): Promise<{ code: number, output: string }> {
  const command = [process.execPath, ...loaderArgs(), file, ...args].map(quote).join(' ')
  return await new Promise((resolve) => {
    execFile('script', ['-qfec', command, '/dev/null'], { cwd: ROOT, env, timeout, maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: stdout })
    })
  })
}
