// `npm run bench [-- --quick]`: signed-request throughput through the gateway, side by side with
// a plain proxy, alternating scenarios over rounds and reporting medians (the machine is shared).
import { cpus } from 'node:os'
import { Redis } from 'ioredis'
import { badMac, codeExchanges, runLoad, signed, unknownTokens, type Credentials, type LoadResult } from './load.js'
import { pinning, pinSelf, startRedis, startTarget, type Target } from './processes.js'
import { resultsDirectory } from './paths.js'
import { table, writeReport, type Report, type ScenarioResult } from './report.js'

const quick = process.argv.includes('--quick')
const SECONDS = quick ? 1 : 8
const ROUNDS = 3
const CONNECTIONS = 50
const PATH = '/api/profile'

interface Scenario {
  id: string
  name: string
  target: Target
  setupRequest?: Parameters<typeof runLoad>[0]['setupRequest']
  onRedis?: boolean
}

interface Measurement extends LoadResult {
  cpuPerRequest: number
  redisPerRequest?: number
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

async function redisCommands (redis: Redis): Promise<number> {
  const info = await redis.info('commandstats')
  return [...info.matchAll(/calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0)
}

// At a fixed rate, latency is the point: fewer connections, so that the load generator's own
// queueing on its shared core does not dominate what is measured.
const FIXED_RATE_CONNECTIONS = 10

async function measure (scenario: Scenario, redis: Redis, seconds: number, rate?: number): Promise<Measurement> {
  const url = `http://127.0.0.1:${scenario.target.ready.port}${PATH}`
  const [cpuBefore, redisBefore] = await Promise.all([scenario.target.cpu(), redisCommands(redis)])
  const result = await runLoad({ url, seconds, connections: rate === undefined ? CONNECTIONS : FIXED_RATE_CONNECTIONS, ...(rate !== undefined && { rate }), ...(scenario.setupRequest !== undefined && { setupRequest: scenario.setupRequest }) })
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

async function main (): Promise<void> {
  pinSelf()
  const redisServer = await startRedis()
  const redis = new Redis(redisServer.url)
  const targets: Target[] = []
  const start = async (kind: string, core: number, args: string[] = []): Promise<Target> => {
    const target = await startTarget(kind, core, args)
    targets.push(target)
    return target
  }
  try {
    const upstream = await start('upstream', 1)
    const upstreamUrl = `http://127.0.0.1:${upstream.ready.port}`
    const proxy = await start('proxy', 0, [upstreamUrl])
    const memory = await start('gateway-memory', 0, [upstreamUrl])
    const onRedis = await start('gateway-redis', 0, [upstreamUrl, redisServer.url])
    const cold = await start('gateway-cold', 0, [upstreamUrl, redisServer.url])
    const base = (target: Target): string => `http://127.0.0.1:${target.ready.port}`
    const credentials = (target: Target): Credentials => target.ready as unknown as Credentials

    const alternating: Scenario[] = [
      { id: '2', name: 'plain proxy (baseline)', target: proxy },
      { id: '3', name: 'gateway, hot LRU, embedded nonces', target: memory, setupRequest: signed(base(memory), PATH, credentials(memory)) },
      { id: '4', name: 'gateway, Redis nonces', target: onRedis, setupRequest: signed(base(onRedis), PATH, credentials(onRedis)), onRedis: true },
      { id: '5', name: 'gateway, no LRU (cold path)', target: cold, setupRequest: signed(base(cold), PATH, credentials(cold)), onRedis: true },
      { id: '6a', name: 'rejection: bad MAC, valid token', target: onRedis, setupRequest: badMac(base(onRedis), PATH, credentials(onRedis)), onRedis: true },
      { id: '6b', name: 'rejection: random unknown tokens', target: onRedis, setupRequest: unknownTokens(base(onRedis), PATH), onRedis: true }
    ]
    const upstreamAlone: Scenario = { id: '1', name: 'upstream alone (context)', target: upstream }

    // Warm every path once, then alternate A B A B ... over the rounds.
    for (const scenario of alternating) await measure(scenario, redis, 1)
    const runs = new Map<string, Measurement[]>(alternating.map((scenario) => [scenario.id, []]))
    const upstreamRuns: Measurement[] = []
    for (let round = 0; round < ROUNDS; round++) {
      upstreamRuns.push(await measure(upstreamAlone, redis, SECONDS))
      for (const scenario of alternating) runs.get(scenario.id)!.push(await measure(scenario, redis, SECONDS))
      process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`)
    }
    const results = [summarise(upstreamAlone, upstreamRuns), ...alternating.map((scenario) => summarise(scenario, runs.get(scenario.id)!))]
    const baseline = results.find((result) => result.id === '2')!
    for (const result of results) result.ratio = result.rps / baseline.rps

    // 7: code exchanges per second on Redis, each request a fresh code.
    const codeCount = quick ? 2000 : 40_000
    const { codes } = await onRedis.request<{ codes: string[] }>({ type: 'codes', count: codeCount }, 'codes')
    const exchangeScenario: Scenario = { id: '7', name: 'token endpoint: code exchanges (Redis)', target: onRedis, setupRequest: codeExchanges(onRedis.ready as never, codes), onRedis: true }
    const cpuBefore = await onRedis.cpu()
    const exchange = await runLoad({ url: `${base(onRedis)}/oauth2/token`, seconds: 60, connections: CONNECTIONS, amount: codes.length, setupRequest: exchangeScenario.setupRequest! })
    const cpuUsed = await onRedis.cpu() - cpuBefore
    results.push({ id: '7', name: exchangeScenario.name, rps: exchange.rps, p50: exchange.p50, p99: exchange.p99, errors: exchange.errors, non2xx: exchange.non2xx, cpuPerRequest: cpuUsed / Math.max(1, exchange.requests), rounds: 1 })

    // p99 added by the check at half the baseline's maximum rate (fixed offered load).
    const rate = Math.max(10, Math.round(baseline.rps / 2))
    const fixedProxy = await measure(alternating[0]!, redis, SECONDS, rate)
    const fixedGateway = await measure(alternating[2]!, redis, SECONDS, rate)
    results.push(
      { id: '8a', name: `plain proxy at ${rate} req/s, ${FIXED_RATE_CONNECTIONS} conns`, ...pickLoad(fixedProxy), rounds: 1 },
      { id: '8b', name: `gateway (Redis nonces) at ${rate} req/s, ${FIXED_RATE_CONNECTIONS} conns`, ...pickLoad(fixedGateway), rounds: 1 }
    )

    const ratio = (id: string): number => results.find((result) => result.id === id)!.ratio!
    const cpu = (id: string): number => results.find((result) => result.id === id)!.cpuPerRequest
    const success = Math.min(cpu('3'), cpu('4'))
    const report: Report = {
      date: new Date().toISOString(),
      quick,
      cores: cpus().length,
      node: process.version,
      pinning: pinning ? 'taskset: gateway on core 0; load, upstream, Redis on core 1' : 'no taskset: unpinned',
      secondsPerRun: SECONDS,
      connections: CONNECTIONS,
      scenarios: results,
      targets: [
        { name: 'MAC check, hot LRU (3 ÷ 2)', goal: '≥ 0.93', value: ratio('3'), met: ratio('3') >= 0.93 },
        { name: 'shared Redis nonce check (4 ÷ 2)', goal: '≥ 0.85', value: ratio('4'), met: ratio('4') >= 0.85 },
        { name: 'cold path (5 ÷ 2)', goal: '≥ 0.75', value: ratio('5'), met: ratio('5') >= 0.75 },
        { name: 'bad-MAC rejection CPU ÷ success CPU', goal: '≤ 1', value: cpu('6a') / success, met: cpu('6a') <= success },
        { name: 'unknown-token rejection CPU ÷ success CPU', goal: '≤ 1', value: cpu('6b') / success, met: cpu('6b') <= success },
        { name: 'Redis calls per unknown-token request', goal: '< 1', value: results.find((r) => r.id === '6b')!.redisPerRequest!, met: results.find((r) => r.id === '6b')!.redisPerRequest! < 1 },
        { name: 'code exchanges per second (Redis)', goal: '≥ 3000', value: exchange.rps, met: exchange.rps >= 3000 },
        { name: 'p99 added at half the baseline rate, ms', goal: '< 1', value: fixedGateway.p99 - fixedProxy.p99, met: fixedGateway.p99 - fixedProxy.p99 < 1 }
      ]
    }
    const file = await writeReport(report, resultsDirectory)
    process.stdout.write(`${table(report)}\n\n${report.pinning}; ${report.cores} cores; Node ${report.node}; ${SECONDS}s runs, ${ROUNDS} rounds, medians\nresults: ${file}\n`)
  } finally {
    redis.disconnect()
    await Promise.all(targets.map(async (target) => await target.stop()))
    redisServer.stop()
  }
}

function pickLoad (run: Measurement): Omit<ScenarioResult, 'id' | 'name' | 'rounds'> {
  return { rps: run.rps, p50: run.p50, p99: run.p99, errors: run.errors, non2xx: run.non2xx, cpuPerRequest: run.cpuPerRequest }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`)
  process.exitCode = 1
})
