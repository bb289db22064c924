import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Runs a TypeScript entry point of the project (e.g. `gateway/cli.ts`) in a child process: Node
 * strips the types itself, as it does for the tests, so the child's coverage is the sources'.
 */
export function spawnSource (file: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  return spawn(process.execPath, [file, ...args], { cwd: ROOT, ...options })
}
