import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

// Under tap, children load TypeScript as the tests do (tap's loader), so that their coverage maps
// back to the sources; run on their own, the tests use tsx.
const loader = process.execArgv.filter((arg) => arg.includes('@tapjs/typescript'))
const typescript = loader.length > 0 ? loader : ['--import', 'tsx']

/** Runs a TypeScript entry point of the project (e.g. `gateway/cli.ts`) in a child process. */
export function spawnSource (file: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  return spawn(process.execPath, [...typescript, file, ...args], { cwd: ROOT, ...options })
}
