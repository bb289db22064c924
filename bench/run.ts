// `npm run bench [-- --quick]`: signed-request throughput through the gateway, side by side with
// a plain proxy, alternating scenarios over rounds and reporting the best undisturbed round and the
// median (the machine is shared). The scenarios and the processes they load are in
// bench/scenarios.ts, how one is measured in bench/measure.ts; `--ladder` runs bench/ladder.ts instead,
// `--parts` bench/parts.ts (each part of the verified path timed alone, in one process).
// `--pair` measures only the baseline and the gateway as shipped; `--smoke` runs `--quick --pair`
// and checks what it reports (bench/smoke.ts, CI's step after the tests).
import type { Redis } from 'ioredis'
import { assess, chartGoals, type Results } from './goals.ts'
import { runLadder } from './ladder.ts'
import { runParts } from './parts.ts'
import { alternated, compareWith, measure, ROUNDS, runFacts, SECONDS, summarise, type Run } from './measure.ts'
import { resultsDirectory } from './paths.ts'
import { pinSelf, type Population } from './processes.ts'
import { BASELINE_ID, table, writeReport, type Report, type ScenarioResult } from './report.ts'
import {
  baselineScenario, codeExchangeScenario, CODE_COUNT, fixedRateScenarios, MIX_LRU, seedPopulation, shippedScenario, startBench,
  startPair, stopAll, throughputScenarios, upstreamAlone, WORKER_COUNTS, workersScenario, type Bench, type Scenario, type Stop
} from './scenarios.ts'
import { runSmoke } from './smoke.ts'

/** The code exchange run ends when the codes are used up; this only bounds it. */
const EXCHANGE_SECONDS = 60

/** A scenario with its result, in the order of the report. */
interface Measured {
  scenario: Scenario
  result: ScenarioResult
}

async function measureOnce (scenario: Scenario, redis: Redis, run: Run): Promise<Measured> {
  return { scenario, result: summarise(scenario, [await measure(scenario, redis, run)]) }
}

async function inTurns (bench: Pick<Bench, 'redis'>, scenarios: Scenario[], run: Run, label: string): Promise<Measured[]> {
  const runs = await alternated(bench.redis, scenarios, run, label)
  return scenarios.map((scenario) => ({ scenario, result: summarise(scenario, runs.get(scenario)!) }))
}

/** The throughput scenarios and the upstream alone, alternated, each with its ratio to the baseline. */
async function inRounds (bench: Bench, compared: Scenario[]): Promise<Measured[]> {
  const measured = await inTurns(bench, [upstreamAlone(bench), ...compared], { seconds: SECONDS }, 'throughput')
  const baseline = measured.find(({ result }) => result.id === BASELINE_ID)!.result
  for (const { result } of measured) compareWith(baseline, result)
  return measured
}

/** By number, then by letter: 1, 2, ..., 6a, 6b, 7, 8a, 8b, 9, 10, 11, 12a, 12b. */
function byId ({ result: a }: Measured, { result: b }: Measured): number {
  return Number.parseInt(a.id, 10) - Number.parseInt(b.id, 10) || a.id.localeCompare(b.id)
}

/** Every scenario, in the report's order (by id), and the mix's population, made before any measurement. */
async function runScenarios (bench: Bench, stops: Stop[]): Promise<{ measured: Measured[], population: Population }> {
  const population = await seedPopulation(bench)
  process.stderr.write(`population: ${population.credentials.length} tokens in ${population.seconds.toFixed(1)} s\n`)
  // The workers idle while the others are measured: started once, measured in the same rounds.
  const workers: Scenario[] = []
  for (const count of WORKER_COUNTS) {
    const scenario = await workersScenario(bench, count)
    stops.push(async () => { await scenario.target.stop() })
    workers.push(scenario)
  }
  const measured = await inRounds(bench, [...throughputScenarios(bench, population.credentials), ...workers])
  measured.push(await measureOnce(await codeExchangeScenario(bench), bench.redis, { seconds: EXCHANGE_SECONDS, amount: CODE_COUNT }))
  const baseline = measured.find(({ result }) => result.id === BASELINE_ID)!.result
  const rate = Math.max(10, Math.round(baseline.rps / 2))
  // Alternated like the throughput ones: a single run of each was as noisy as the difference it measures.
  measured.push(...await inTurns(bench, fixedRateScenarios(bench, rate), { seconds: SECONDS, rate }, 'fixed rate'))
  return { measured: measured.sort(byId), population }
}

/** `--pair`: the baseline and the gateway as shipped, alternated, the shipped one with its ratios. */
async function runPair (stops: Stop[]): Promise<Measured[]> {
  const pair = await startPair(stops)
  const measured = await inTurns(pair, [baselineScenario(pair.proxy, pair.shipped), shippedScenario(pair)], { seconds: SECONDS }, 'pair')
  compareWith(measured[0]!.result, measured[1]!.result)
  return measured
}

function buildReport (measured: Measured[], population?: Population): Report {
  const results: Results = new Map(measured.map(({ result }) => [result.id, result]))
  return {
    ...runFacts('gateway'),
    scenarios: measured.map(({ result }) => result),
    targets: measured.flatMap(({ scenario, result }) => (scenario.goals ?? []).map((goal) => assess(goal, result, results))),
    ...(population !== undefined && { populationTokens: population.credentials.length, tokenLruMax: MIX_LRU, populationSeconds: population.seconds })
  }
}

async function publish (report: Report, goals: Map<string, number>): Promise<void> {
  const file = await writeReport(report, resultsDirectory, goals)
  process.stdout.write(`${table(report)}\n\n${report.pinning}; ${report.cores} cores; Node ${report.node}; ${SECONDS}s runs, ${ROUNDS} rounds; best undisturbed round and medians\nresults: ${file}\n`)
}

async function main (): Promise<void> {
  pinSelf()
  if (process.argv.includes('--smoke')) return await runSmoke()
  if (process.argv.includes('--ladder')) return await runLadder()
  if (process.argv.includes('--parts')) return await runParts()
  const stops: Stop[] = []
  try {
    const { measured, population } = process.argv.includes('--pair') ? { measured: await runPair(stops), population: undefined } : await runScenarios(await startBench(stops), stops)
    await publish(buildReport(measured, population), chartGoals(measured.map(({ scenario }) => scenario)))
  } finally {
    await stopAll(stops)
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`)
  process.exitCode = 1
})
