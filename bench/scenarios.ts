// What the benchmark runs (bench/run.ts measures it): the processes under test, started once, and
// the scenarios over them, each with the goals it must reach.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { ratioGoal, resultOf, valueGoal, type Goal, type Results, type ValueGoal } from './goals.ts'
import { badMac, codeExchanges, signed, unknownTokens, zipfSigned, type Credentials, type LoadOptions } from './load.ts'
import type { CacheStats } from './messages.ts'
import { startGateway, startRedis, startServer, type Gateway, type Population, type Target } from './processes.ts'
import { startRedisCluster, startWorkers } from './scale.ts'
import { BASELINE_ID } from './report.ts'

export const quick = process.argv.includes('--quick')
export const PATH = '/api/profile'
// At a fixed rate, latency is the point: fewer connections, so that the load generator's own
// queueing on its shared core does not dominate what is measured.
export const FIXED_RATE_CONNECTIONS = 10
export const CONNECTIONS = 50
export const CODE_COUNT = quick ? 2000 : 40_000
/** The mix's live tokens and its token LRU, a tenth of them; smaller in a quick run, same shape. */
export const POPULATION = quick ? 20_000 : 200_000
export const MIX_LRU = POPULATION / 10

export interface Scenario {
  id: string
  name: string
  target: Target
  /** Where the load goes; default the proxied API path. */
  path?: string
  setupRequest?: LoadOptions['setupRequest']
  /** Redis commands per request go into the result. */
  onRedis?: boolean
  /** The target's token LRU counts, read around each measurement for its hit ratio. */
  cache?: () => Promise<CacheStats>
  /** The target's log file, whose growth per request goes into the result. */
  logFile?: string
  /** What the scenario must reach: each goal is a row of the targets table. */
  goals?: Goal[]
}

/** The processes under test, a client of the bench's Redis to count its commands, and a scratch directory. */
export interface Bench {
  redis: Redis
  directory: string
  /** Where the shipped gateway logs, as an operator would keep its logs. */
  shippedLog: string
  upstream: Target
  proxy: Target
  memory: Gateway
  onRedis: Gateway
  cold: Gateway
  mix: Gateway
  shipped: Gateway
  /** Redis nonces and tokens on a local 3-master Redis Cluster. */
  cluster: Gateway
  /** Redis's URL, for the processes started later (the workers). */
  redisUrl: string
}

export type Stop = () => unknown

export const base = (target: Target): string => `http://127.0.0.1:${target.ready.port}`

/** The part of the bench the smoke run (bench/smoke.ts) needs: the baseline and the gateway as shipped. */
export type Pair = Pick<Bench, 'redis' | 'redisUrl' | 'directory' | 'shippedLog' | 'upstream' | 'proxy' | 'shipped'>

/** A start whose stop goes on `stops` at once, so that a later failing start still stops it. */
function starter (stops: Stop[]) {
  return <T extends { stop: Stop }>(thing: T): T => {
    stops.push(async () => await thing.stop())
    return thing
  }
}

/** Redis, the upstream, the plain proxy and the shipped gateway, each on its core; what started is on `stops`. */
export async function startPair (stops: Stop[]): Promise<Pair> {
  const started = starter(stops)
  const directory = await mkdtemp(join(tmpdir(), 'macgate-bench-'))
  stops.push(async () => await rm(directory, { recursive: true, force: true }))
  const redisServer = started(await startRedis())
  const redis = new Redis(redisServer.url)
  stops.push(() => redis.disconnect())
  const upstream = started(await startServer('upstream', 1))
  const shippedLog = join(directory, 'shipped.log')
  return {
    redis,
    redisUrl: redisServer.url,
    directory,
    shippedLog,
    upstream,
    proxy: started(await startServer('proxy', 0, [base(upstream)])),
    shipped: started(await startGateway('gateway-shipped', 0, [base(upstream), redisServer.url, shippedLog]))
  }
}

/** Starts Redis and every target, each on its core; what started is on `stops`, even if a start fails. */
export async function startBench (stops: Stop[]): Promise<Bench> {
  const started = starter(stops)
  const pair = await startPair(stops)
  const onRedis = [base(pair.upstream), pair.redisUrl]
  const redisCluster = started(await startRedisCluster())
  return {
    ...pair,
    memory: started(await startGateway('gateway-memory', 0, [base(pair.upstream)])),
    onRedis: started(await startGateway('gateway-redis', 0, onRedis)),
    cold: started(await startGateway('gateway-cold', 0, onRedis)),
    mix: started(await startGateway('gateway-mix', 0, [...onRedis, String(MIX_LRU)])),
    cluster: started(await startGateway('gateway-cluster', 0, [base(pair.upstream), redisCluster.seeds]))
  }
}

/** Last started, first stopped: the targets, then the Redis client, then Redis, then the scratch directory. */
export async function stopAll (stops: Stop[]): Promise<void> {
  for (const stop of stops.reverse()) await stop()
}

/** The mix's tokens, made in its gateway's store once per run, before anything is measured. */
export async function seedPopulation ({ mix, directory }: Bench): Promise<Population> {
  return await mix.population(POPULATION, join(directory, 'population.txt'))
}

function signedBy (gateway: Gateway): NonNullable<Scenario['setupRequest']> {
  return signed(base(gateway), PATH, gateway.ready)
}

/**
 * 4q: scenario 4 on a route with a quota never reached (bench/target.ts, QUOTA_ROUTE): the counter
 * rides in the nonce batch's script call, so its ratio stays within 0.02 of 4's.
 */
function quotaScenario ({ onRedis }: Bench): Scenario {
  const path = '/quota/profile'
  return {
    id: '4q',
    name: 'gateway, Redis nonces, route with a quota',
    target: onRedis,
    path,
    setupRequest: signed(base(onRedis), path, onRedis.ready),
    onRedis: true,
    goals: [valueGoal('a quota costs at most 0.02 of the best-of ratio: 4q ÷ 2 − 4 ÷ 2', '≥', -0.02, (own, results) => (own.bestRatio ?? Number.NaN) - (resultOf(results, '4').bestRatio ?? Number.NaN))]
  }
}

/** Rejections must cost no more CPU than the cheaper of the two successful checks (3 and 4). */
function cheaperThanSuccess (name: string): ValueGoal {
  const successCpu = (results: Results): number => Math.min(resultOf(results, '3').cpuPerRequest, resultOf(results, '4').cpuPerRequest)
  return valueGoal(name, '≤', 1, (own, results) => own.cpuPerRequest / successCpu(results))
}

/**
 * Signed requests to a target that does not check them (the upstream, the plain proxy): built as
 * every gateway scenario builds its own, so that the load generator does the same work for all.
 */
function signedFor (target: Target, signer: Gateway): NonNullable<Scenario['setupRequest']> {
  return signed(base(target), PATH, signer.ready)
}

/** 1: the upstream on its own, for context; measured each round, not compared. */
export function upstreamAlone (bench: Bench): Scenario {
  return { id: '1', name: 'upstream alone (context)', target: bench.upstream, setupRequest: signedFor(bench.upstream, bench.memory) }
}

/**
 * 9: a realistic population, each request signed with a token drawn by a Zipf law (s = 1), on
 * Redis, the token LRU holding a tenth of the tokens: a few are hot, most rare and read from Redis.
 */
function mixScenario ({ mix }: Bench, population: Credentials[]): Scenario {
  return {
    id: '9',
    name: `mix: ${population.length} Zipf tokens, LRU ${MIX_LRU}, Redis`,
    target: mix,
    setupRequest: zipfSigned(base(mix), PATH, population),
    onRedis: true,
    cache: async () => await mix.cache(),
    goals: [ratioGoal('realistic token mix', 0.80)]
  }
}

/** 10: the gateway as `macgate start` builds it, default log level, logging to a file, Redis nonces. */
export function shippedScenario ({ shipped, shippedLog }: Pick<Bench, 'shipped' | 'shippedLog'>): Scenario {
  return {
    id: '10',
    name: 'shipped: as macgate start, info log to a file',
    target: shipped,
    setupRequest: signedBy(shipped),
    onRedis: true,
    logFile: shippedLog,
    goals: [
      ratioGoal('the gateway as shipped', 0.85),
      valueGoal('the gateway as shipped, least CPU per request: proxy\'s ÷ its own (10 ÷ 2)', '≥', 0.83, (own) => own.bestCpuRatio ?? Number.NaN)
    ]
  }
}

/** 11: Redis nonces and token reads on a 3-master Redis Cluster, one script call per slot and turn. */
function clusterScenario ({ cluster }: Bench): Scenario {
  return {
    id: '11',
    name: 'gateway, Redis nonces on a 3-master cluster',
    target: cluster,
    setupRequest: signedBy(cluster),
    goals: [ratioGoal('Redis nonces on a Redis Cluster', 0.85)]
  }
}

/** 2: the plain proxy, every ratio's denominator; its requests signed with `signer`'s token. */
export function baselineScenario (proxy: Target, signer: Gateway): Scenario {
  return { id: BASELINE_ID, name: 'plain proxy (baseline)', target: proxy, setupRequest: signedFor(proxy, signer) }
}

/** 2 to 6b, 9 to 11: alternated over the rounds, each compared with the baseline's throughput. */
export function throughputScenarios (bench: Bench, population: Credentials[]): Scenario[] {
  const { memory, onRedis, cold } = bench
  return [
    baselineScenario(bench.proxy, memory),
    { id: '3', name: 'gateway, hot LRU, embedded nonces', target: memory, setupRequest: signedBy(memory), goals: [ratioGoal('MAC check, hot LRU', 0.92)] },
    { id: '4', name: 'gateway, Redis nonces', target: onRedis, setupRequest: signedBy(onRedis), onRedis: true, goals: [ratioGoal('shared Redis nonce check', 0.88)] },
    quotaScenario(bench),
    { id: '5', name: 'gateway, no LRU (cold path)', target: cold, setupRequest: signedBy(cold), onRedis: true, goals: [ratioGoal('cold path', 0.70)] },
    {
      id: '6a',
      name: 'rejection: bad MAC, valid token',
      target: onRedis,
      setupRequest: badMac(base(onRedis), PATH, onRedis.ready),
      onRedis: true,
      goals: [cheaperThanSuccess('bad-MAC rejection CPU ÷ success CPU')]
    },
    {
      id: '6b',
      name: 'rejection: random unknown tokens',
      target: onRedis,
      setupRequest: unknownTokens(base(onRedis), PATH),
      onRedis: true,
      goals: [
        cheaperThanSuccess('unknown-token rejection CPU ÷ success CPU'),
        valueGoal('Redis calls per unknown-token request', '<', 1, (own) => own.redisPerRequest ?? Number.NaN)
      ]
    },
    mixScenario(bench, population),
    shippedScenario(bench),
    clusterScenario(bench)
  ]
}

/** 7: code exchanges per second on Redis, each request a fresh code made beforehand. */
export async function codeExchangeScenario ({ onRedis }: Bench): Promise<Scenario> {
  const codes = await onRedis.codes(CODE_COUNT)
  return {
    id: '7',
    name: 'token endpoint: code exchanges (Redis)',
    target: onRedis,
    path: '/oauth2/token',
    setupRequest: codeExchanges(onRedis.ready, codes),
    goals: [valueGoal('code exchanges per second (Redis)', '≥', 3000, (own) => own.rps)]
  }
}

/**
 * 12a, 12b: `macgate start --workers 1` and `--workers 2` (Redis nonces, info log to a file, as
 * 10), measured as every other scenario is: in the alternated rounds, best undisturbed round, CPU
 * per request summed over the primary and its workers, pinned to core 0 (scale.ts). So 12a's CPU per
 * request reads against 10's (the same gateway, the same log): what a worker costs per request, not
 * what a second core gives, which a 2-core machine with the load generator on the other core cannot show.
 */
export async function workersScenario ({ upstream, redisUrl, onRedis }: Bench, count: number): Promise<Scenario> {
  const target = await startWorkers(count, base(upstream), redisUrl, onRedis.ready)
  return { id: `12${'ab'[count - 1]!}`, name: `macgate start --workers ${count} (Redis nonces, info log to a file, core 0)`, target, setupRequest: signed(base(target), PATH, target.ready), onRedis: true, logFile: target.logFile }
}

export const WORKER_COUNTS = [1, 2]

/** 8a, 8b: the p99 the check adds at a fixed offered load, half the baseline's maximum rate. */
export function fixedRateScenarios (bench: Bench, rate: number): Scenario[] {
  const { proxy, onRedis } = bench
  const load = `at ${rate} req/s, ${FIXED_RATE_CONNECTIONS} conns`
  return [
    { id: '8a', name: `plain proxy ${load}`, target: proxy, setupRequest: signedFor(proxy, bench.memory) },
    {
      id: '8b',
      name: `gateway (Redis nonces) ${load}`,
      target: onRedis,
      setupRequest: signedBy(onRedis),
      goals: [valueGoal('p99 added at half the baseline rate, least of the rounds, ms', '<', 1, (own, results) => own.bestP99 - resultOf(results, '8a').bestP99)]
    }
  ]
}
