// Where a target's heap bytes go, for attributing a ladder rung's counted bytes to the code that
// allocates them: V8's sampling heap profiler over a counting pass, summed by function. On only when
// BENCH_ALLOCATION_SITES names a folder (`npm run bench -- --ladder` with it set); the sampling
// itself allocates nothing per request, so the pass's counts stay what they are without it.
import { Session } from 'node:inspector/promises'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/** One sample per this many bytes allocated, on average: fine enough for sites of tens of bytes a request. */
const SAMPLING_INTERVAL = 256
/** Sites written per file, largest first: enough that two rungs' files compare site by site. */
const SITES = 400

interface ProfileNode {
  callFrame: { functionName: string, url: string, lineNumber: number }
  selfSize: number
  children: ProfileNode[]
}

/** Sums each function's sampled bytes (by name, file and line) over the profile's tree. */
function sitesOf (node: ProfileNode, sites = new Map<string, number>()): Map<string, number> {
  if (node.selfSize > 0) {
    const { functionName, url, lineNumber } = node.callFrame
    const file = url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*\/dist\//, '')
    const site = `${functionName === '' ? '(anonymous)' : functionName} ${file}:${lineNumber + 1}`
    sites.set(site, (sites.get(site) ?? 0) + node.selfSize)
  }
  for (const child of node.children) sitesOf(child, sites)
  return sites
}

export class AllocationSites {
  readonly #folder: string | undefined
  #session: Session | undefined

  constructor (folder = process.env.BENCH_ALLOCATION_SITES) {
    this.#folder = folder === '' ? undefined : folder
  }

  async start (): Promise<void> {
    if (this.#folder === undefined) return
    this.#session = new Session()
    this.#session.connect()
    await this.#session.post('HeapProfiler.startSampling', { samplingInterval: SAMPLING_INTERVAL, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  }

  /** Stops sampling and writes the largest sites, each as its share of the pass's sampled bytes and as bytes a request. */
  async stop (name: string, requestBytes: number): Promise<void> {
    const session = this.#session
    if (session === undefined || this.#folder === undefined) return
    this.#session = undefined
    const { profile } = await session.post('HeapProfiler.stopSampling') as { profile: { head: ProfileNode } }
    session.disconnect()
    const sites = [...sitesOf(profile.head)].sort(([, a], [, b]) => b - a)
    const total = sites.reduce((sum, [, bytes]) => sum + bytes, 0)
    const lines = sites.slice(0, SITES).map(([site, bytes]) => `${String(Math.round(requestBytes * bytes / total)).padStart(7)} B/req  ${(100 * bytes / total).toFixed(1).padStart(5)}%  ${site}`)
    await writeFile(join(this.#folder, `${name}.txt`), `${name}: ${Math.round(requestBytes)} heap bytes a request, by where they were allocated (sampled)\n${lines.join('\n')}\n`)
  }
}
