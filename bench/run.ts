// `npm run bench [-- --quick]`: signed-request throughput through the gateway, side by side with
// a plain proxy, alternating scenarios over rounds and reporting medians (the machine is shared).
import { cpus } from 'node:os'
import { Redis } from 'ioredis'
import { assess, chartGoals, ratioGoal, resultOf, valueGoal, type Goal, type Results, type ValueGoal } from './goals.js'
import { badMac, codeExchanges, runLoad, signed, unknownTokens, type LoadOptions, type LoadResult } from './load.js'
import { resultsDirectory } from './paths.js'
import { pinning, pinSelf, startGateway, startRedis, startServer, type Gateway, type Target } from './processes.js'
import { BASELINE_ID, table, writeReport, type Report, type ScenarioResult } from './report.js'

const quick = process.argv.includes('--quick')
const SECONDS = quick ? 1 : 8
const ROUNDS = 3
const CONNECTIONS = 50
// At a fixed rate, latency is the point: fewer connections, so that the load generator's own
// queueing on its shared core does not dominate what is measured.
const FIXED_RATE_CONNECTIONS = 10
const PATH = '/api/profile'
const CODE_COUNT = quick ? 2000 : 40_000
/** The code exchange run ends when the codes are used up; this only bounds it. */
const EXCHANGE_SECONDS = 60

interface Scenario {
  id: string
  name: string
  target: Target
  /** Where the load goes; default the proxied API path. */
  path?: string
  setupRequest?: LoadOptions['setupRequest']
  /** Redis commands per request go into the result. */
  onRedis?: boolean
  /** What the scenario must reach: each goal is a row of the targets table. */
  goals?: Goal[]
}

/** How one measurement loads its scenario: for `seconds`, or `amount` requests, at most or at `rate`. */
interface Run {
  seconds: number
  rate?: number
  amount?: number
}

interface Measurement extends LoadResult {
  cpuPerRequest: number
  redisPerRequest?: number
}

/** A scenario with its result, in the order of the report. */
interface Measured {
  scenario: Scenario
  result: ScenarioResult
}

/** The processes under test, and a client of the bench's Redis to count its commands. */
interface Bench {
  redis: Redis
  upstream: Target
  proxy: Target
  memory: Gateway
  onRedis: Gateway
  cold: Gateway
}

type Stop = () => unknown

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const base = (target: Target): string => `http://127.0.0.1:${target.ready.port}`

/** Starts Redis and every target, each on its core; what started is on `stops`, even if a start fails. */
async function startBench (stops: Stop[]): Promise<Bench> {
  const started = <T extends { stop: Stop }>(thing: T): T => {
    stops.push(async () => await thing.stop())
    return thing
  }
  const redisServer = started(await startRedis())
  const redis = new Redis(redisServer.url)
  stops.push(() => redis.disconnect())
  const upstream = started(await startServer('upstream', 1))
  const upstreamUrl = base(upstream)
  return {
    redis,
    upstream,
    proxy: started(await startServer('proxy', 0, [upstreamUrl])),
    memory: started(await startGateway('gateway-memory', 0, [upstreamUrl])),
    onRedis: started(await startGateway('gateway-redis', 0, [upstreamUrl, redisServer.url])),
    cold: started(await startGateway('gateway-cold', 0, [upstreamUrl, redisServer.url]))
  }
}

/** Last started, first stopped: the targets, then the Redis client, then Redis. */
async function stopAll (stops: Stop[]): Promise<void> {
  for (const stop of stops.reverse()) await stop()
}

function signedBy (gateway: Gateway): NonNullable<Scenario['setupRequest']> {
  return signed(base(gateway), PATH, gateway.ready)
}

/** Rejections must cost no more CPU than the cheaper of the two successful checks (3 and 4). */
function cheaperThanSuccess (name: string): ValueGoal {
  const successCpu = (results: Results): number => Math.min(resultOf(results, '3').cpuPerRequest, resultOf(results, '4').cpuPerRequest)
  return valueGoal(name, '≤', 1, (own, results) => own.cpuPerRequest / successCpu(results))
}

/** 1: the upstream on its own, for context; measured each round, not compared. */
function upstreamAlone ({ upstream }: Bench): Scenario {
  return { id: '1', name: 'upstream alone (context)', target: upstream }
}

/** 2 to 6b: alternated over the rounds, each compared with the baseline's throughput. */
function throughputScenarios ({ proxy, memory, onRedis, cold }: Bench): Scenario[] {
  return [
    { id: BASELINE_ID, name: 'plain proxy (baseline)', target: proxy },
    { id: '3', name: 'gateway, hot LRU, embedded nonces', target: memory, setupRequest: signedBy(memory), goals: [ratioGoal('MAC check, hot LRU', 0.93)] },
    { id: '4', name: 'gateway, Redis nonces', target: onRedis, setupRequest: signedBy(onRedis), onRedis: true, goals: [ratioGoal('shared Redis nonce check', 0.85)] },
    { id: '5', name: 'gateway, no LRU (cold path)', target: cold, setupRequest: signedBy(cold), onRedis: true, goals: [ratioGoal('cold path', 0.75)] },
    {
      id: '6a', name: 'rejection: bad MAC, valid token', target: onRedis, setupRequest: badMac(base(onRedis), PATH, onRedis.ready), onRedis: true,
      goals: [cheaperThanSuccess('bad-MAC rejection CPU ÷ success CPU')]
    },
    {
      id: '6b', name: 'rejection: random unknown tokens', target: onRedis, setupRequest: unknownTokens(base(onRedis), PATH), onRedis: true,
      goals: [
        cheaperThanSuccess('unknown-token rejection CPU ÷ success CPU'),
        valueGoal('Redis calls per unknown-token request', '<', 1, (own) => own.redisPerRequest ?? Number.NaN)
      ]
    }
  ]
}

/** 7: code exchanges per second on Redis, each request a fresh code made beforehand. */
async function codeExchangeScenario ({ onRedis }: Bench): Promise<Scenario> {
  const codes = await onRedis.codes(CODE_COUNT)
  return {
    id: '7', name: 'token endpoint: code exchanges (Redis)', target: onRedis, path: '/oauth2/token', setupRequest: codeExchanges(onRedis.ready, codes),
    goals: [valueGoal('code exchanges per second (Redis)', '≥', 3000, (own) => own.rps)]
  }
}

/** 8a, 8b: the p99 the check adds at a fixed offered load, half the baseline's maximum rate. */
function fixedRateScenarios ({ proxy, onRedis }: Bench, rate: number): Scenario[] {
  const load = `at ${rate} req/s, ${FIXED_RATE_CONNECTIONS} conns`
  return [
    { id: '8a', name: `plain proxy ${load}`, target: proxy },
    {
      id: '8b', name: `gateway (Redis nonces) ${load}`, target: onRedis, setupRequest: signedBy(onRedis),
      goals: [valueGoal('p99 added at half the baseline rate, ms', '<', 1, (own, results) => own.p99 - resultOf(results, '8a').p99)]
    }
  ]
}

async function redisCommands (redis: Redis): Promise<number> {
  const info = await redis.info('commandstats')
  return [...info.matchAll(/calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0)
}

async function measure (scenario: Scenario, redis: Redis, { seconds, rate, amount }: Run): Promise<Measurement> {
  const url = `${base(scenario.target)}${scenario.path ?? PATH}`
  const connections = rate === undefined ? CONNECTIONS : FIXED_RATE_CONNECTIONS
  const [cpuBefore, redisBefore] = await Promise.all([scenario.target.cpu(), redisCommands(redis)])
  const result = await runLoad({ url, seconds, connections, rate, amount, setupRequest: scenario.setupRequest })
  const [cpuAfter, redisAfter] = await Promise.all([scenario.target.cpu(), redisCommands(redis)])
  const requests = Math.max(1, result.requests)
  // The two INFO calls of this measurement are not the scenario's.
  return { ...result, cpuPerRequest: (cpuAfter - cpuBefore) / requests, ...(scenario.onRedis === true && { redisPerRequest: Math.max(0, redisAfter - redisBefore - 1) / requests }) }
}

function summarise (scenario: Scenario, runs: Measurement[]): ScenarioResult {
  const pick = (key: 'rps' | 'p50' | 'p99' | 'cpuPerRequest'): number => median(runs.map((run) => run[key]))
  return {
    id: scenario.id,
    name: scenario.name,
    rps: pick('rps'),
    p50: pick('p50'),
    p99: pick('p99'),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    non2xx: runs.reduce((sum, run) => sum + run.non2xx, 0),
    cpuPerRequest: pick('cpuPerRequest'),
    ...(scenario.onRedis === true && { redisPerRequest: median(runs.map((run) => run.redisPerRequest ?? 0)) }),
    rounds: runs.length
  }
}

async function measureOnce (scenario: Scenario, redis: Redis, run: Run): Promise<Measured> {
  return { scenario, result: summarise(scenario, [await measure(scenario, redis, run)]) }
}

/**
 * Warms every compared path once, then each round runs the upstream alone and the scenarios
 * A B A B ..., so that the shared machine's slow spells fall on all of them; medians over rounds.
 */
async function inRounds (bench: Bench, compared: Scenario[]): Promise<Measured[]> {
  for (const scenario of compared) await measure(scenario, bench.redis, { seconds: 1 })
  const scenarios = [upstreamAlone(bench), ...compared]
  const runs = new Map<Scenario, Measurement[]>(scenarios.map((scenario) => [scenario, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const scenario of scenarios) runs.get(scenario)!.push(await measure(scenario, bench.redis, { seconds: SECONDS }))
    process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`)
  }
  const measured = scenarios.map((scenario) => ({ scenario, result: summarise(scenario, runs.get(scenario)!) }))
  const baseline = measured.find(({ result }) => result.id === BASELINE_ID)!.result
  for (const { result } of measured) result.ratio = result.rps / baseline.rps
  return measured
}

/** Every scenario, in the report's order: the rounds, then the code exchanges, then the fixed rate. */
async function runScenarios (bench: Bench): Promise<Measured[]> {
  const measured = await inRounds(bench, throughputScenarios(bench))
  measured.push(await measureOnce(await codeExchangeScenario(bench), bench.redis, { seconds: EXCHANGE_SECONDS, amount: CODE_COUNT }))
  const baseline = measured.find(({ result }) => result.id === BASELINE_ID)!.result
  const rate = Math.max(10, Math.round(baseline.rps / 2))
  for (const scenario of fixedRateScenarios(bench, rate)) measured.push(await measureOnce(scenario, bench.redis, { seconds: SECONDS, rate }))
  return measured
}

function buildReport (measured: Measured[]): Report {
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
    targets: measured.flatMap(({ scenario, result }) => (scenario.goals ?? []).map((goal) => assess(goal, result, results)))
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
    const measured = await runScenarios(await startBench(stops))
    await publish(buildReport(measured), chartGoals(measured.map(({ scenario }) => scenario)))
  } finally {
    await stopAll(stops)
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`)
  process.exitCode = 1
})
