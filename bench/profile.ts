// `npm run bench:profile -- <target> [seconds]`: one target under load with `node --cpu-prof`;
// writes the profile under bench/results/ (open it in Chrome DevTools) and prints the functions
// with the most self time.
// `npm run bench:profile -- --compare <target> <target> [seconds] [rounds]`: two targets profiled in
// turn, `rounds` times each, and the functions whose time per request differs most (profiles not kept).
// A target: gateway-memory, gateway-redis, gateway-cold, proxy, gateway-mix (scenario 9's population,
// made first by a gateway of its own, not profiled), or a ladder rung as `ladder:<step>`
// (`ladder:access-log`: the ladder's gateway up to that step, bench/rungs.ts).
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runLoad, signed, zipfSigned, type Credentials } from './load.ts'
import { isGatewayReady, type GatewayKind } from './messages.ts'
import { resultsDirectory } from './paths.ts'
import { comparisonTable, selfPerRequest } from './profile-compare.ts'
import { functionLabel, stepsPerRequest, stepsTable, sumOf, timeBy, type Profile } from './profile-steps.ts'
import { pinSelf, startGateway, startRedis, startServer, type Target } from './processes.ts'
import { GATEWAY_STEPS, isGatewayStep } from './rungs.ts'
import { MIX_LRU, PATH, POPULATION } from './scenarios.ts'

/** The gateways profiled by kind (the shipped one needs a log file: the ladder's `ladder:redis-nonces` is it, without the admin listener). */
const PROFILED = new Set<string>(['gateway-memory', 'gateway-redis', 'gateway-cold', 'gateway-mix'] satisfies GatewayKind[])
const LADDER = 'ladder:'
const USAGE = `usage: npm run bench:profile -- <target> [seconds]
       npm run bench:profile -- --compare <target> <target> [seconds] [rounds]
a target: ${[...PROFILED, 'proxy'].join(', ')}, or ladder:<step> (${GATEWAY_STEPS.join(', ')})\n`

function isTarget (kind: string): boolean {
  return kind === 'proxy' || PROFILED.has(kind) || (kind.startsWith(LADDER) && isGatewayStep(kind.slice(LADDER.length)))
}

/** A table's rows: each key's share of the whole, largest first. */
function shares (totals: Map<string, number>, count: number, suffix = ''): string {
  const total = sumOf(totals)
  return [...totals].sort((a, b) => b[1] - a[1]).slice(0, count)
    .map(([key, micros]) => `${(100 * micros / total).toFixed(1).padStart(5)}%${suffix}  ${key}`).join('\n')
}

function topSelfTime (profile: Profile, count = 25): string {
  const totals = timeBy(profile, functionLabel)
  return shares(totals, count)
}

/** Self time by where the code lives: our modules, each package, Node's internals, GC. */
function byOwner (profile: Profile): string {
  const busy = timeBy(profile, ({ url, functionName }) => url === ''
    ? functionName === '(idle)' ? undefined : `(${functionName.replace(/[()]/g, '') || 'native'})`
    : url.includes('node_modules/')
      ? url.replace(/^.*node_modules\/((@[^/]+\/)?[^/]+).*$/, '$1')
      : url.startsWith('node:') ? 'node internals' : url.replace(/^file:\/\/.*?\/(plugin|gateway|bench)\//, '$1/').replace(/\/[^/]*$/, '/'))
  return shares(busy, 16, ' of busy')
}

interface Profiled {
  profile: Profile
  requests: number
  rps: number
  p99: number
  /** The profile's file, in `directory`. */
  file: string
}

/**
 * One target profiled under load (50 connections, after 3 s of load to warm it, `seconds` measured),
 * with Redis, the upstream and, for a ladder rung, its log file started for it and stopped after.
 */
async function profileOnce (kind: string, seconds: number, directory: string, interval: number): Promise<Profiled> {
  const scratch = await mkdtemp(join(tmpdir(), 'macgate-profile-'))
  const redis = kind === 'gateway-memory' || kind === 'proxy' ? undefined : await startRedis()
  const upstream = await startServer('upstream', 1)
  let target: Target | undefined
  try {
    const args = [`http://127.0.0.1:${upstream.ready.port}`, redis?.url ?? '']
    const profiling = ['--cpu-prof', `--cpu-prof-dir=${directory}`, `--cpu-prof-interval=${interval}`]
    const population = kind === 'gateway-mix' ? await populate([...args, String(MIX_LRU)], join(scratch, 'population.txt')) : undefined
    target = kind === 'proxy'
      ? await startServer(kind, 0, args, profiling)
      : kind.startsWith(LADDER)
        ? await startGateway('gateway-ladder', 0, [...args, kind.slice(LADDER.length), join(scratch, 'access.log')], profiling)
        : await startGateway(kind as GatewayKind, 0, population === undefined ? args : [...args, String(MIX_LRU)], profiling)
    const base = `http://127.0.0.1:${target.ready.port}`
    const setupRequest = population !== undefined
      ? zipfSigned(base, PATH, population)
      : isGatewayReady(target.ready) ? signed(base, PATH, target.ready) : undefined
    const warm = await runLoad({ url: `${base}${PATH}`, seconds: 3, connections: 50, setupRequest })
    const result = await runLoad({ url: `${base}${PATH}`, seconds, connections: 50, setupRequest })
    const pid = target.child.pid!
    await target.stop('SIGTERM')
    // --cpu-prof writes one profile per thread (a loader, when one runs, has its own): the main thread is thread 0.
    const written = (await readdir(directory)).filter((name) => name.endsWith('.cpuprofile') && name.includes(`.${pid}.`))
    const file = written.find((name) => name.includes(`.${pid}.0.`))!
    for (const other of written) if (other !== file) await rm(join(directory, other))
    // The warm-up's requests are in the profile too: counted with the measured ones.
    const requests = warm.requests + result.requests
    return { profile: JSON.parse(await readFile(join(directory, file), 'utf8')) as Profile, requests, rps: result.rps, p99: result.p99, file }
  } finally {
    await target?.stop()
    await upstream.stop()
    redis?.stop()
    await rm(scratch, { recursive: true, force: true })
  }
}

/** The mix's tokens, made in Redis by a gateway of its own (so that their making is in no profile), which then stops. */
async function populate (args: string[], file: string): Promise<Credentials[]> {
  const seeder = await startGateway('gateway-mix', 0, args)
  try {
    return (await seeder.population(POPULATION, file)).credentials
  } finally {
    await seeder.stop('SIGTERM')
  }
}

async function compare (first: string, second: string, seconds: number, rounds: number): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), 'macgate-profiles-'))
  try {
    const runs: Array<Array<Map<string, number>>> = [[], []]
    for (let round = 0; round < rounds; round++) {
      for (const [index, kind] of [first, second].entries()) {
        const { profile, requests, rps } = await profileOnce(kind, seconds, directory, 200)
        runs[index]!.push(selfPerRequest(profile, requests))
        process.stderr.write(`round ${round + 1}: ${kind} ${rps.toFixed(0)} req/s\n`)
      }
    }
    process.stdout.write(`${comparisonTable([first, second], runs[0]!, runs[1]!)}\n`)
  } finally {
    await rm(directory, { recursive: true, force: true })
  }
}

async function profileOne (kind: string, seconds: number): Promise<void> {
  const directory = fileURLToPath(resultsDirectory)
  const { profile, requests, rps, p99, file } = await profileOnce(kind, seconds, directory, 1000)
  const steps = stepsTable(stepsPerRequest(profile, requests))
  process.stdout.write(`${kind}: ${rps.toFixed(0)} req/s, p99 ${p99.toFixed(2)} ms\nprofile: bench/results/${file}\n\nCPU per request by step (under the profiler, which adds its own cost):\n${steps}\n\n${byOwner(profile)}\n\n${topSelfTime(profile)}\n`)
  if (process.argv.includes('--discard')) await rm(join(directory, file))
}

pinSelf()
const args = process.argv.slice(2).filter((arg) => arg !== '--discard')
if (args[0] === '--compare') {
  const [, first = '', second = '', seconds = '10', rounds = '2'] = args
  if (!isTarget(first) || !isTarget(second) || !(Number(seconds) > 0) || !(Number.isInteger(Number(rounds)) && Number(rounds) > 0)) {
    process.stderr.write(USAGE)
    process.exit(2)
  }
  await compare(first, second, Number(seconds), Number(rounds))
} else {
  const [kind = 'gateway-memory', seconds = '10'] = args
  if (!isTarget(kind) || !(Number(seconds) > 0)) {
    process.stderr.write(USAGE)
    process.exit(2)
  }
  await profileOne(kind, Number(seconds))
}
