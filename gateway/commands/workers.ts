import cluster, { type Worker } from 'node:cluster'
import { availableParallelism } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { OperatorError, UsageError } from './usage.ts'

/**
 * `--workers` / MACGATE_WORKERS: a whole number, or `auto` for one per core. A bad value names
 * where it came from: the flag is a command-line mistake, the variable the operator's setting.
 */
export function workerCount (value: string | undefined, from: '--workers' | 'MACGATE_WORKERS' = '--workers'): number {
  if (value === undefined || value === '') return 1
  if (value === 'auto') return availableParallelism()
  const count = Number(value)
  if (!Number.isInteger(count) || count < 1 || count > 256) {
    const message = `${from} must be a whole number from 1 to 256, or auto, not ${value}`
    throw from === '--workers' ? new UsageError(message) : new OperatorError(message)
  }
  return count
}

function say (line: string): void {
  process.stderr.write(`${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, msg: line })}\n`)
}

/**
 * The primary of `start --workers N`: N copies of `macgate start` (node:cluster) share the port.
 *
 * - A worker that dies before it listens ends the whole start (a busy port, an unreachable store:
 *   restarting would only repeat it); its own message has said why, and its exit code is ours.
 * - A worker that dies while serving is replaced, at once the first time and at most one
 *   replacement a second after that, so that a crash loop does not spin.
 * - SIGTERM or SIGINT asks every worker to drain (each closes its listener, finishes in-flight
 *   requests and closes its store), and the primary exits once they all have.
 */
export async function superviseWorkers (count: number): Promise<void> {
  let stopping = false
  let lastReplacement = 0
  const serving = new Set<Worker>()
  const workers = (): Worker[] => Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined)

  const stop = (exitCode: number): void => {
    if (stopping) return
    stopping = true
    process.exitCode = exitCode
    for (const worker of workers()) worker.process.kill('SIGTERM')
    if (workers().length === 0) process.exit()
  }

  cluster.on('listening', (worker, address) => {
    // The public port only: the sample API listens on a Unix socket of its own.
    if (address.addressType !== 4 && address.addressType !== 6) return
    serving.add(worker)
    if (serving.size === count) say(`${count} workers serving on ${address.address ?? '127.0.0.1'}:${address.port}`)
  })
  cluster.on('exit', (worker, code, signal) => {
    const served = serving.delete(worker)
    if (stopping) {
      if (workers().length === 0) process.exit()
      return
    }
    if (!served) return stop(code === 0 ? 1 : code)
    say(`worker ${worker.process.pid} exited (${signal ?? `code ${code}`}); starting another`)
    const wait = Math.max(0, lastReplacement + 1000 - Date.now())
    lastReplacement = Date.now() + wait
    void sleep(wait).then(() => { if (!stopping) cluster.fork() })
  })
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => stop(0))
  for (let i = 0; i < count; i++) cluster.fork()
}
