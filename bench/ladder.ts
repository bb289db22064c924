// `npm run bench -- --ladder [--quick]`: where each microsecond of a verified request goes. From the
// plain proxy up to the gateway as `macgate start` ships, each rung the real gateway with one more of
// its own parts on (bench/rungs.ts, bench/ladder-gateway.ts), timed as the bench times its scenarios (alternated
// rounds, best undisturbed round: bench/measure.ts), then counted in passes of its own: V8 heap
// bytes, promises, nextTick ticks and write system calls per request (bench/counters.ts), the bytes
// and writes in the rung's process and in more started afresh for it (COUNTED_PROCESSES).
// `--rungs route-check,mac-check` climbs only the plain proxy and the named gateway rungs (each
// keeping its id), for the smoke run (bench/smoke.ts).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import type { Counts } from './counters.ts'
import { writeLadder, type LadderReport, type LadderRung, ladderTable } from './ladder-report.ts'
import { runLoad, signed, zipfSigned } from './load.ts'
import { alternated, compareWith, median, ROUNDS, runFacts, SECONDS, summarise } from './measure.ts'
import { resultsDirectory } from './paths.ts'
import { startGateway, startRedis, startServer, type Gateway } from './processes.ts'
import { GATEWAY_STEPS, isGatewayStep, isTracingStep, type GatewayStep } from './rungs.ts'
import { base, CONNECTIONS, PATH, POPULATION, quick, stopAll, type Scenario, type Stop } from './scenarios.ts'

/**
 * Requests of each counting pass: enough that the IPC of the pass itself (a promise or two) does
 * not show; fewer for a few `--rungs` in a quick run (the smoke run), still under 0.01 a request.
 * `--count N` sets it: a quick run's timing with a full run's counts (2,000 requests see a few
 * young-generation collections, and their heap bytes move by some hundreds; 20,000 by tens).
 */
const COUNTED_REQUESTS = numberOption('--count', 100) ?? (quick ? (process.argv.includes('--rungs') ? 500 : 2000) : 20_000)

/**
 * Processes each rung's bytes and writes are counted in: its own and the rest started afresh, each
 * warmed first; the median is the rung's. Passes in one process agree to some tens of bytes a
 * request, but one process's figure differs from the next's by up to a few hundred (the same code
 * and load; what V8 compiled, and when), which is a rung's whole budget (L7's three spread by
 * 368 on 2026-11-27): the median of five. `--processes N` sets it.
 */
const COUNTED_PROCESSES = numberOption('--processes', 1) ?? (quick ? 1 : 5)

/** Load that warms a rung's fresh process before its count (a quick run's: its one round's length). */
const WARM_SECONDS = quick ? SECONDS : 6

/** `name N`, N an integer of at least `least`; undefined without `name`. */
function numberOption (name: string, least: number): number | undefined {
  const at = process.argv.indexOf(name)
  if (at === -1) return undefined
  const value = Number(process.argv[at + 1])
  if (!Number.isInteger(value) || value < least) throw new Error(`${name} takes a number, at least ${least}, not ${process.argv[at + 1]}`)
  return value
}

const STEP_NAMES: Record<GatewayStep, string> = {
  'route-check': '+ the gateway app and its route check (MAC check off)',
  'mac-check': '+ the MAC check (embedded nonces, hot LRU)',
  'header-rewrite': '+ the upstream header rewrite',
  'request-metrics': '+ request metrics',
  'access-log': '+ the access log at info, into a file',
  'redis-nonces': '+ Redis nonces',
  'traces-1pct': '+ traces, 1% sampled (parentbased_traceidratio 0.01)',
  'traces-all': '+ traces, every request sampled'
}

/** The gateway rungs named by `--rungs`, or undefined for the whole ladder. */
function chosenSteps (): GatewayStep[] | undefined {
  const at = process.argv.indexOf('--rungs')
  if (at === -1) return undefined
  const steps = (process.argv[at + 1] ?? '').split(',')
  const unknown = steps.filter((step) => !isGatewayStep(step))
  if (unknown.length > 0) throw new Error(`--rungs: no such rung ${unknown.join(', ')} (the rungs: ${GATEWAY_STEPS.join(', ')})`)
  return steps as GatewayStep[]
}

interface Started {
  redis: Redis
  rungs: Scenario[]
  /** How to start a rung's process afresh, its requests signed for it (the population rung has none: counted in its own). */
  again: Map<Scenario, () => Promise<Scenario>>
  shipped: Gateway
  directory: string
  /** Only the rungs `--rungs` named (with the plain proxy): no shipped and population rungs. */
  partial: boolean
}

/** Every rung's process, each on core 0, over one upstream and one Redis on core 1; what started is on `stops`. */
async function startRungs (stops: Stop[], only?: GatewayStep[]): Promise<Started> {
  const started = <T extends { stop: Stop }>(thing: T): T => {
    stops.push(async () => await thing.stop())
    return thing
  }
  const directory = await mkdtemp(join(tmpdir(), 'macgate-ladder-'))
  stops.push(async () => await rm(directory, { recursive: true, force: true }))
  const redisServer = started(await startRedis())
  const redis = new Redis(redisServer.url)
  stops.push(() => redis.disconnect())
  const upstream = base(started(await startServer('upstream', 1)))
  const again = new Map<Scenario, () => Promise<Scenario>>()
  // Each start of a rung's process logs into a file of its own.
  let starts = 0
  const logFile = (name: string): string => join(directory, `${name}-${++starts}.log`)
  /** A rung from `make`, which starts its process: this first one runs to the end, `again` keeps `make`. */
  const rung = async (make: () => Promise<Scenario>): Promise<Scenario> => {
    const scenario = await make()
    started(scenario.target)
    again.set(scenario, make)
    return scenario
  }
  const shippedRung = async (id: string): Promise<Scenario> => {
    const shippedLog = logFile('shipped')
    const gateway = await startGateway('gateway-shipped', 0, [upstream, redisServer.url, shippedLog])
    return { id, name: '+ process metrics and the admin listener (= macgate start)', target: gateway, setupRequest: signed(base(gateway), PATH, gateway.ready), onRedis: true, logFile: shippedLog }
  }
  // The tracing rungs come above the shipped gateway and its population rung: each is the Redis
  // rung with tracing on (the shipped gateway's admin listener costs no request anything).
  const untraced = GATEWAY_STEPS.filter((step) => !isTracingStep(step)).length
  const shipped = await rung(async () => await shippedRung(`L${untraced + 2}`))
  const shippedGateway = shipped.target as Gateway
  // The servers that check nothing get requests signed as the gateways' are, with the shipped one's token.
  const unchecked = (kind: 'proxy' | 'proxy-hook', id: string, name: string) => async (): Promise<Scenario> => {
    const target = await startServer(kind, 0, [upstream])
    return { id, name, target, setupRequest: signed(base(target), PATH, shippedGateway.ready) }
  }
  const rungOf = (step: GatewayStep, id: string) => async (): Promise<Scenario> => {
    const log = logFile(step)
    const gateway = await startGateway('gateway-ladder', 0, [upstream, redisServer.url, step, log])
    const logged = step !== 'route-check' && step !== 'mac-check' && step !== 'header-rewrite' && step !== 'request-metrics'
    return { id, name: STEP_NAMES[step], target: gateway, setupRequest: signed(base(gateway), PATH, gateway.ready), onRedis: isTracingStep(step) || step === 'redis-nonces', ...(logged && { logFile: log }) }
  }
  const rungs = [await rung(unchecked('proxy', 'L0', 'plain @fastify/http-proxy'))]
  if (only === undefined) rungs.push(await rung(unchecked('proxy-hook', 'L1', '+ an empty callback onRequest hook')))
  const chosen = (step: GatewayStep): boolean => only === undefined || only.includes(step)
  for (const [index, step] of GATEWAY_STEPS.entries()) {
    if (chosen(step) && !isTracingStep(step)) rungs.push(await rung(rungOf(step, `L${index + 2}`)))
  }
  if (only === undefined) rungs.push(shipped)
  for (const [index, step] of GATEWAY_STEPS.entries()) {
    // Past the shipped rung and the population rung after it (populationRung).
    if (chosen(step) && isTracingStep(step)) rungs.push(await rung(rungOf(step, `L${index + 4}`)))
  }
  return { redis, rungs, again, shipped: shippedGateway, directory, partial: only !== undefined }
}

/** The rung after the shipped one: the shipped gateway again, each request signed with a token of a Zipf-drawn population. */
async function populationRung ({ shipped, directory, rungs }: Started): Promise<Scenario> {
  const population = await shipped.population(POPULATION, join(directory, 'population.txt'))
  process.stderr.write(`population: ${population.credentials.length} tokens in ${population.seconds.toFixed(1)} s\n`)
  const shippedRung = rungs.find((rung) => rung.target === shipped)!
  return { ...shippedRung, id: `L${GATEWAY_STEPS.filter((step) => !isTracingStep(step)).length + 3}`, name: `the same, ${population.credentials.length} Zipf-drawn tokens`, setupRequest: zipfSigned(base(shipped), PATH, population.credentials) }
}

/** One counting pass over `COUNTED_REQUESTS` requests: what the target counted, per request. */
async function countPass (rung: Scenario, promises: boolean, label = rung.id): Promise<Counts> {
  const { target } = rung
  await target.count!(promises)
  const { requests } = await runLoad({ url: `${base(target)}${PATH}`, seconds: 60, amount: COUNTED_REQUESTS, connections: CONNECTIONS, setupRequest: rung.setupRequest })
  const counts = await target.counted!(requests, label)
  const per = (value: number): number => value / Math.max(1, requests)
  return { bytes: per(counts.bytes), promises: per(counts.promises), ticks: per(counts.ticks), writes: per(counts.writes) }
}

/** A count in a fresh process of the rung, warmed first and stopped after its pass; its allocation sites (BENCH_ALLOCATION_SITES) as L3-2 for L3's second. */
async function countFresh (rung: Scenario, again: () => Promise<Scenario>, ordinal: number): Promise<Counts> {
  const fresh = await again()
  try {
    await runLoad({ url: `${base(fresh.target)}${PATH}`, seconds: WARM_SECONDS, connections: CONNECTIONS, setupRequest: fresh.setupRequest })
    return await countPass(fresh, false, `${rung.id}-${ordinal}`)
  } finally {
    await fresh.target.stop()
  }
}

/**
 * Bytes and writes without the promise hook: the median over the rung's own process and, where the
 * rung can be started `again`, fresh ones up to `COUNTED_PROCESSES`, each warmed first and stopped
 * after its pass. Promises and ticks with the hook (which slows every promise), in a pass of their
 * own in the rung's process.
 */
async function counted (rung: Scenario, again: (() => Promise<Scenario>) | undefined): Promise<{ counts: Counts, processBytes: number[] }> {
  const passes = [await countPass(rung, false)]
  if (again !== undefined) {
    while (passes.length < COUNTED_PROCESSES) passes.push(await countFresh(rung, again, passes.length + 1))
  }
  const hooked = await countPass(rung, true)
  const processBytes = passes.map((pass) => pass.bytes)
  return { counts: { bytes: median(processBytes), writes: median(passes.map((pass) => pass.writes)), promises: hooked.promises, ticks: hooked.ticks }, processBytes }
}

async function measureLadder (started: Started): Promise<LadderRung[]> {
  const after = started.rungs.findIndex((rung) => rung.target === started.shipped) + 1
  const rungs = started.partial ? started.rungs : [...started.rungs.slice(0, after), await populationRung(started), ...started.rungs.slice(after)]
  const runs = await alternated(started.redis, rungs, { seconds: SECONDS }, 'ladder')
  const results = rungs.map((rung) => summarise(rung, runs.get(rung)!))
  const baseline = results[0]!
  // The population rung is counted first, as the rounds left its token LRU: an entry lives
  // `maxAgeMs` (5 minutes), and the other rungs' counts, in fresh processes, take longer than that.
  const countsOf = new Map<Scenario, Awaited<ReturnType<typeof counted>>>()
  for (const rung of [...rungs].sort((a, b) => Number(started.again.has(a)) - Number(started.again.has(b)))) {
    countsOf.set(rung, await counted(rung, started.again.get(rung)))
    process.stderr.write(`counted ${rung.id}\n`)
  }
  const ladder: LadderRung[] = []
  for (const [index, rung] of rungs.entries()) {
    const result = results[index]!
    compareWith(baseline, result)
    const { counts, processBytes } = countsOf.get(rung)!
    const below = ladder[index - 1]
    // A rung counted alone in the process of the rung below (the population rung, in the shipped
    // gateway's) adds what that process's own count does not have: not the median of others.
    const belowBytes = below === undefined ? 0 : processBytes.length === 1 && rung.target === rungs[index - 1]!.target ? below.processBytes[0]! : below.counts.bytes
    ladder.push({
      ...result,
      counts,
      processBytes,
      addedCpu: below === undefined ? 0 : result.bestCpuPerRequest - below.bestCpuPerRequest,
      addedCounts: below === undefined
        ? { bytes: 0, promises: 0, ticks: 0, writes: 0 }
        : { bytes: counts.bytes - belowBytes, promises: counts.promises - below.counts.promises, ticks: counts.ticks - below.counts.ticks, writes: counts.writes - below.counts.writes }
    })
  }
  return ladder
}

export async function runLadder (): Promise<void> {
  const stops: Stop[] = []
  try {
    const rungs = await measureLadder(await startRungs(stops, chosenSteps()))
    const report: LadderReport = {
      ...runFacts('the rung'),
      countedRequests: COUNTED_REQUESTS,
      countedProcesses: COUNTED_PROCESSES,
      rungs
    }
    const file = await writeLadder(report, resultsDirectory)
    process.stdout.write(`${ladderTable(report)}\n\n${report.pinning}; ${report.cores} cores; Node ${report.node}; ${SECONDS}s runs, ${ROUNDS} rounds; counted over ${COUNTED_REQUESTS} requests in ${COUNTED_PROCESSES} processes a rung (the population rung in its own)\nresults: ${file}\n`)
  } finally {
    await stopAll(stops)
  }
}
