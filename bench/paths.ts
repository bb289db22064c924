import { fileURLToPath } from 'node:url'

/** True when running the TypeScript sources (the tests' smoke run), false for the built bench. */
export const fromSource = import.meta.url.endsWith('.ts')

/** Results go beside the sources, bench/results/, whichever copy runs. */
export const resultsDirectory = new URL(fromSource ? './results/' : '../../bench/results/', import.meta.url)

/** A sibling module of this one, as a path to start a process with. */
export function sibling (name: string): string {
  return fileURLToPath(new URL(`./${name}.${fromSource ? 'ts' : 'js'}`, import.meta.url))
}

/** Node flags for children: from the sources, the TypeScript loader this process runs with. */
export const childNodeArgs = fromSource ? process.execArgv.filter((arg) => !arg.startsWith('--cpu-prof')) : []
