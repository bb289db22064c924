// `npm run bench [-- --quick]`: signed-request throughput through the gateway, side by side with
// a plain proxy, alternating scenarios over rounds and reporting medians (the machine is shared).
// The scenarios and the processes they load are in bench/scenarios.ts; here, how they are measured.
import { stat } from 'node:fs/promises'
import { cpus } from 'node:os'
import type { Redis } from 'ioredis'
import { assess, chartGoals, type Results } from './goals.js'
import { runLoad, type LoadResult } from './load.js'
import type { CacheStats } from './messages.js'
import { resultsDirectory } from './paths.js'
import { pinning, pinSelf, type Population } from './processes.js'
import { BASELINE_ID, table, writeReport, type Report, type ScenarioResult } from './report.js'
import {
  base, codeExchangeScenario, CODE_COUNT, FIXED_RATE_CONNECTIONS, fixedRateScenarios, MIX_LRU, PATH, quick, seedPopulation, startBench,
  stopAll, throughputScenarios, upstreamAlone, WORKER_COUNTS, workersScenario, type Bench, type Scenario, type Stop
} from './scenarios.js'

const SECONDS = quick ? 1 : 8
// A quick run (the smoke test) shows every scenario works; only the full one needs medians.
const ROUNDS = quick ? 1 : 3
const CONNECTIONS = 50
/** The code exchange run ends when the codes are used up; this only bounds it. */
const EXCHANGE_SECONDS = 60

/** How one measurement loads its scenario: for `seconds`, or `amount` requests, at most or at `rate`. */
interface Run {
  seconds: number
  rate?: number
  amount?: number
}

interface Measurement extends LoadResult {
  cpuPerRequest: number
  redisPerRequest?: number
  /** The token LRU's lookups during the measurement, for the scenarios that read them. */
  cache?: CacheStats
  /** Bytes the log file grew by during the measurement, for the scenarios that keep one. */
  logBytes?: number
}

/** A scenario with its result, in the order of the report. */
interface Measured {
  scenario: Scenario
  result: ScenarioResult
}

/** What was read of the target and of Redis just before, or just after, a measurement. */
interface Snapshot {
  cpu: number
  redisCommands: number
  cache?: CacheStats
  logBytes?: number
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0)

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

async function measure (scenario: Scenario, redis: Redis, { seconds, rate, amount }: Run): Promise<Measurement> {
  const url = `${base(scenario.target)}${scenario.path ?? PATH}`
  const connections = rate === undefined ? CONNECTIONS : FIXED_RATE_CONNECTIONS
  const before = await snapshot(scenario, redis)
  const result = await runLoad({ url, seconds, connections, rate, amount, setupRequest: scenario.setupRequest })
  const after = await snapshot(scenario, redis)
  const requests = Math.max(1, result.requests)
  return {
    ...result,
    cpuPerRequest: (after.cpu - before.cpu) / requests,
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

function summarise (scenario: Scenario, runs: Measurement[]): ScenarioResult {
  const pick = (key: 'rps' | 'p50' | 'p99' | 'cpuPerRequest'): number => median(runs.map((run) => run[key]))
  return {
    id: scenario.id,
    name: scenario.name,
    rps: pick('rps'),
    p50: pick('p50'),
    p99: pick('p99'),
    errors: sum(runs.map((run) => run.errors)),
    non2xx: sum(runs.map((run) => run.non2xx)),
    cpuPerRequest: pick('cpuPerRequest'),
    ...(scenario.onRedis === true && { redisPerRequest: median(runs.map((run) => run.redisPerRequest ?? 0)) }),
    ...totals(runs),
    rounds: runs.length
  }
}

async function measureOnce (scenario: Scenario, redis: Redis, run: Run): Promise<Measured> {
  return { scenario, result: summarise(scenario, [await measure(scenario, redis, run)]) }
}

/**
 * Warms every compared path once (for a second, loaded as `run` loads it), then each round runs
 * the scenarios A B A B ..., so that the shared machine's slow spells fall on all of them; medians
 * over rounds. `label` names the rounds in the progress lines.
 */
async function alternated (bench: Bench, scenarios: Scenario[], run: Run, label: string): Promise<Measured[]> {
  for (const scenario of scenarios) await measure(scenario, bench.redis, { ...run, seconds: 1 })
  const runs = new Map<Scenario, Measurement[]>(scenarios.map((scenario) => [scenario, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const scenario of scenarios) runs.get(scenario)!.push(await measure(scenario, bench.redis, run))
    process.stderr.write(`${label}: round ${round + 1}/${ROUNDS} done\n`)
  }
  return scenarios.map((scenario) => ({ scenario, result: summarise(scenario, runs.get(scenario)!) }))
}

/** The throughput scenarios and the upstream alone, alternated, each with its ratio to the baseline. */
async function inRounds (bench: Bench, compared: Scenario[]): Promise<Measured[]> {
  const measured = await alternated(bench, [upstreamAlone(bench), ...compared], { seconds: SECONDS }, 'throughput')
  const baseline = measured.find(({ result }) => result.id === BASELINE_ID)!.result
  for (const { result } of measured) result.ratio = result.rps / baseline.rps
  return measured
}

/** By number, then by letter: 1, 2, ..., 6a, 6b, 7, 8a, 8b, 9, 10, 11, 12a, 12b. */
function byId ({ result: a }: Measured, { result: b }: Measured): number {
  return Number.parseInt(a.id, 10) - Number.parseInt(b.id, 10) || a.id.localeCompare(b.id)
}

/** Every scenario, in the report's order (by id), and the mix's population, made before any measurement. */
async function runScenarios (bench: Bench): Promise<{ measured: Measured[], population: Population }> {
  const population = await seedPopulation(bench)
  process.stderr.write(`population: ${population.credentials.length} tokens in ${population.seconds.toFixed(1)} s\n`)
  const measured = await inRounds(bench, throughputScenarios(bench, population.credentials))
  measured.push(await measureOnce(await codeExchangeScenario(bench), bench.redis, { seconds: EXCHANGE_SECONDS, amount: CODE_COUNT }))
  const baseline = measured.find(({ result }) => result.id === BASELINE_ID)!.result
  const rate = Math.max(10, Math.round(baseline.rps / 2))
  // Alternated like the throughput ones: a single run of each was as noisy as the difference it measures.
  measured.push(...await alternated(bench, fixedRateScenarios(bench, rate), { seconds: SECONDS, rate }, 'fixed rate'))
  for (const count of WORKER_COUNTS) {
    const scenario = await workersScenario(bench, count)
    try {
      await measure(scenario, bench.redis, { seconds: 1 })
      const workers = await measureOnce(scenario, bench.redis, { seconds: SECONDS })
      workers.result.ratio = workers.result.rps / baseline.rps
      measured.push(workers)
    } finally {
      await scenario.target.stop()
    }
  }
  return { measured: measured.sort(byId), population }
}

function buildReport (measured: Measured[], population: Population): Report {
  const results: Results = new Map(measured.map(({ result }) => [result.id, result]))
  return {
    date: new Date().toISOString(),
    quick,
    cores: cpus().length,
    node: process.version,
    pinning: pinning ? 'taskset: gateway on core 0; load, upstream, Redis on core 1' : 'no taskset: unpinned',
    secondsPerRun: SECONDS,
    connections: CONNECTIONS,
    scenarios: measured.map(({ result }) => result),
    targets: measured.flatMap(({ scenario, result }) => (scenario.goals ?? []).map((goal) => assess(goal, result, results))),
    populationTokens: population.credentials.length,
    tokenLruMax: MIX_LRU,
    populationSeconds: population.seconds
  }
}

async function publish (report: Report, goals: Map<string, number>): Promise<void> {
  const file = await writeReport(report, resultsDirectory, goals)
  process.stdout.write(`${table(report)}\n\n${report.pinning}; ${report.cores} cores; Node ${report.node}; ${SECONDS}s runs, ${ROUNDS} rounds, medians\nresults: ${file}\n`)
}

async function main (): Promise<void> {
  pinSelf()
  const stops: Stop[] = []
  try {
    const { measured, population } = await runScenarios(await startBench(stops))
    await publish(buildReport(measured, population), chartGoals(measured.map(({ scenario }) => scenario)))
  } finally {
    await stopAll(stops)
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`)
  process.exitCode = 1
})
