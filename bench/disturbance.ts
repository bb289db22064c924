// How much of the machine others used during a measurement: the CPU time of the whole machine
// (/proc/stat) less that of the benchmark's own processes (this one and every process it started,
// read from /proc/<pid>/stat). Other tenants only ever slow a run down, so a round in which they
// used more than DISTURBED_CORES is left out of the best-of. Off Linux nothing is read: no round is marked.
import { readFile } from 'node:fs/promises'

/** Others' use, in cores, above which a round counts as disturbed. */
export const DISTURBED_CORES = 0.25

/** Clock ticks per second of /proc's counters (USER_HZ, 100 on every Linux we run on). */
const TICKS_PER_SECOND = 100

export interface CpuSample {
  /** Busy ticks of the whole machine. */
  machine: number
  /** Ticks of the benchmark's own processes. */
  own: number
  at: number
}

async function readText (file: string): Promise<string> {
  return await readFile(file, 'utf8').catch(() => '')
}

/** user + nice + system + irq + softirq + steal: everything but idle and iowait. */
async function machineBusy (): Promise<number> {
  const fields = (await readText('/proc/stat')).split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? []
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields
  return user + nice + system + irq + softirq + steal
}

/** utime + stime of one process, in ticks; 0 once it is gone. */
async function processTicks (pid: number): Promise<number> {
  const fields = (await readText(`/proc/${pid}/stat`)).split(') ')[1]?.split(' ') ?? []
  return Number(fields[11] ?? 0) + Number(fields[12] ?? 0)
}

/** A process and all its descendants (every thread's children: Node spawns from its main thread). */
async function tree (pid: number): Promise<number[]> {
  const children = (await readText(`/proc/${pid}/task/${pid}/children`)).trim().split(' ').filter((one) => one !== '').map(Number)
  const below = await Promise.all(children.map(tree))
  return [pid, ...below.flat()]
}

export async function sampleCpu (): Promise<CpuSample> {
  const pids = await tree(process.pid)
  const [machine, own] = await Promise.all([machineBusy(), Promise.all(pids.map(processTicks)).then((all) => all.reduce((a, b) => a + b, 0))])
  return { machine, own, at: performance.now() }
}

/**
 * Cores used by processes that are not the benchmark's between two samples. A process of ours that
 * exited in between would count as another's; none does while a scenario is measured.
 */
export function othersCores (before: CpuSample, after: CpuSample): number {
  const seconds = Math.max(0.001, (after.at - before.at) / 1000)
  const others = (after.machine - before.machine) - (after.own - before.own)
  return Math.max(0, others) / TICKS_PER_SECOND / seconds
}
