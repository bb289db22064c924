// How a scenario is measured, for the throughput bench (bench/run.ts) and the ladder
// (bench/ladder.ts) alike: short runs alternated over rounds, each round checked for other tenants'
// load (bench/disturbance.ts), reported as the best undisturbed round, the median and the spread.
import { stat } from 'node:fs/promises'
import type { Redis } from 'ioredis'
import { DISTURBED_CORES, othersCores, sampleCpu } from './disturbance.ts'
import { runLoad, type LoadResult } from './load.ts'
import type { CacheStats } from './messages.ts'
import type { BenchRun, ScenarioResult } from './report.ts'
import { cpus } from 'node:os'
import { pinning } from './processes.ts'
import { base, CONNECTIONS, FIXED_RATE_CONNECTIONS, PATH, quick, type Scenario } from './scenarios.ts'

/** Full runs: a warm-up, then 7 rounds of 3 s; a quick run (the smoke test) one round of 1 s. */
export const SECONDS = quick ? 1 : 3
export const ROUNDS = quick ? 1 : 7

/** The facts of this run every report starts with; `onCore0` names what the pinning gives core 0. */
export function runFacts (onCore0: string): BenchRun {
  return {
    date: new Date().toISOString(),
    quick,
    cores: cpus().length,
    node: process.version,
    pinning: pinning ? `taskset: ${onCore0} on core 0; load, upstream, Redis on core 1` : 'no taskset: unpinned',
    secondsPerRun: SECONDS,
    rounds: ROUNDS,
    connections: CONNECTIONS
  }
}

/** How one measurement loads its scenario: for `seconds`, or `amount` requests, at most or at `rate`. */
export interface Run {
  seconds: number
  rate?: number
  amount?: number
}

export interface Measurement extends LoadResult {
  cpuPerRequest: number
  redisPerRequest?: number
  /** The token LRU's lookups during the measurement, for the scenarios that read them. */
  cache?: CacheStats
  /** Bytes the log file grew by during the measurement, for the scenarios that keep one. */
  logBytes?: number
  /** Cores that processes not the benchmark's used meanwhile. */
  othersCores: number
}

/** What was read of the target and of Redis just before, or just after, a measurement. */
interface Snapshot {
  cpu: number
  redisCommands: number
  cache?: CacheStats
  logBytes?: number
}

export const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

export const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0)

async function redisCommands (redis: Redis): Promise<number> {
  const info = await redis.info('commandstats')
  return [...info.matchAll(/calls=(\d+)/g)].reduce((total, match) => total + Number(match[1]), 0)
}

async function snapshot (scenario: Scenario, redis: Redis): Promise<Snapshot> {
  const [cpu, commands, cache, logBytes] = await Promise.all([
    scenario.target.cpu(), redisCommands(redis), scenario.cache?.(), scenario.logFile === undefined ? undefined : stat(scenario.logFile).then(({ size }) => size)
  ])
  return { cpu, redisCommands: commands, cache, logBytes }
}

export async function measure (scenario: Scenario, redis: Redis, { seconds, rate, amount }: Run): Promise<Measurement> {
  const url = `${base(scenario.target)}${scenario.path ?? PATH}`
  const connections = rate === undefined ? CONNECTIONS : FIXED_RATE_CONNECTIONS
  const before = await snapshot(scenario, redis)
  const machineBefore = await sampleCpu()
  const result = await runLoad({ url, seconds, connections, rate, amount, setupRequest: scenario.setupRequest })
  const machineAfter = await sampleCpu()
  const after = await snapshot(scenario, redis)
  const requests = Math.max(1, result.requests)
  return {
    ...result,
    cpuPerRequest: (after.cpu - before.cpu) / requests,
    othersCores: othersCores(machineBefore, machineAfter),
    // The two INFO calls of this measurement are not the scenario's.
    ...(scenario.onRedis === true && { redisPerRequest: Math.max(0, after.redisCommands - before.redisCommands - 1) / requests }),
    ...(before.cache !== undefined && after.cache !== undefined && { cache: { hits: after.cache.hits - before.cache.hits, misses: after.cache.misses - before.cache.misses } }),
    ...(before.logBytes !== undefined && after.logBytes !== undefined && { logBytes: after.logBytes - before.logBytes })
  }
}

/** Over every measured request of the scenario: the LRU's share of lookups, and log bytes per request. */
function totals (runs: Measurement[]): Pick<ScenarioResult, 'lruHitRatio' | 'logBytesPerRequest'> {
  const hits = sum(runs.map((run) => run.cache?.hits ?? 0))
  const lookups = hits + sum(runs.map((run) => run.cache?.misses ?? 0))
  const logged = runs.some((run) => run.logBytes !== undefined)
  return {
    ...(runs.some((run) => run.cache !== undefined) && { lruHitRatio: lookups === 0 ? 0 : hits / lookups }),
    ...(logged && { logBytesPerRequest: sum(runs.map((run) => run.logBytes ?? 0)) / Math.max(1, sum(runs.map((run) => run.requests))) })
  }
}

/** (max − min) ÷ median: how far apart the rounds read. */
function spread (values: number[]): number {
  const middle = median(values)
  return middle === 0 ? 0 : (Math.max(...values) - Math.min(...values)) / middle
}

/**
 * Medians over every round; the best (most req/s, least CPU and p99) over the undisturbed rounds,
 * or over all of them when every round was disturbed (`disturbedRounds` then equals `rounds`).
 */
export function summarise (scenario: Scenario, runs: Measurement[]): ScenarioResult {
  const pick = (key: 'rps' | 'p50' | 'p99' | 'cpuPerRequest'): number => median(runs.map((run) => run[key]))
  const quiet = runs.filter((run) => run.othersCores <= DISTURBED_CORES)
  const best = quiet.length > 0 ? quiet : runs
  return {
    id: scenario.id,
    name: scenario.name,
    rps: pick('rps'),
    p50: pick('p50'),
    p99: pick('p99'),
    errors: sum(runs.map((run) => run.errors)),
    non2xx: sum(runs.map((run) => run.non2xx)),
    cpuPerRequest: pick('cpuPerRequest'),
    bestRps: Math.max(...best.map((run) => run.rps)),
    bestCpuPerRequest: Math.min(...best.map((run) => run.cpuPerRequest)),
    bestP99: Math.min(...best.map((run) => run.p99)),
    rpsSpread: spread(runs.map((run) => run.rps)),
    cpuSpread: spread(runs.map((run) => run.cpuPerRequest)),
    disturbedRounds: runs.length - quiet.length,
    ...(scenario.onRedis === true && { redisPerRequest: median(runs.map((run) => run.redisPerRequest ?? 0)) }),
    ...totals(runs),
    rounds: runs.length
  }
}

/** The ratios to the baseline: of medians (`ratio`), of best req/s, and of least CPU per request. */
export function compareWith (baseline: ScenarioResult, result: ScenarioResult): void {
  result.ratio = result.rps / baseline.rps
  result.bestRatio = result.bestRps / baseline.bestRps
  result.bestCpuRatio = baseline.bestCpuPerRequest / result.bestCpuPerRequest
}

/**
 * Warms every compared path once (for a second, loaded as `run` loads it), then each round runs
 * the scenarios A B A B ..., so that the shared machine's slow spells fall on all of them. `label`
 * names the rounds in the progress lines, which also say how busy others kept the machine.
 */
export async function alternated (redis: Redis, scenarios: Scenario[], run: Run, label: string): Promise<Map<Scenario, Measurement[]>> {
  for (const scenario of scenarios) await measure(scenario, redis, { ...run, seconds: 1 })
  const runs = new Map<Scenario, Measurement[]>(scenarios.map((scenario) => [scenario, []]))
  for (let round = 0; round < ROUNDS; round++) {
    const measured = []
    for (const scenario of scenarios) {
      const one = await measure(scenario, redis, run)
      runs.get(scenario)!.push(one)
      measured.push(one)
    }
    const others = Math.max(...measured.map((one) => one.othersCores))
    process.stderr.write(`${label}: round ${round + 1}/${ROUNDS} done (others used up to ${others.toFixed(2)} cores${others > DISTURBED_CORES ? ': disturbed' : ''})\n`)
  }
  return runs
}
