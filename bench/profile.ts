// `npm run bench:profile -- [gateway-memory|gateway-redis|gateway-cold|proxy] [seconds]`: one target
// under load with `node --cpu-prof`; writes the profile under bench/results/ (open it in Chrome
// DevTools) and prints the functions with the most self time.
import { readdir, readFile, rm } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { runLoad, signed } from './load.ts'
import { isGatewayReady, type GatewayKind } from './messages.ts'
import { resultsDirectory } from './paths.ts'
import { pinSelf, startGateway, startRedis, startServer } from './processes.ts'

/** The kinds that need nothing beyond the upstream and Redis (the mix needs its population, the shipped gateway a log file). */
const PROFILED = new Set<string>(['gateway-memory', 'gateway-redis', 'gateway-cold'] satisfies GatewayKind[])
const [kind = 'gateway-memory', seconds = '10'] = process.argv.slice(2)
if (kind !== 'proxy' && !PROFILED.has(kind)) {
  process.stderr.write('usage: npm run bench:profile -- [gateway-memory|gateway-redis|gateway-cold|proxy] [seconds]\n')
  process.exit(2)
}
const directory = fileURLToPath(resultsDirectory)

import { stepsPerRequest, stepsTable, type Profile } from './profile-steps.ts'

function topSelfTime (profile: Profile, count = 25): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const totals = new Map<string, number>()
  for (const id of profile.samples) {
    const frame = byId.get(id)!.callFrame
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/main\//, '')}:${frame.lineNumber + 1}`
    totals.set(name, (totals.get(name) ?? 0) + 1)
  }
  return [...totals].sort((a, b) => b[1] - a[1]).slice(0, count)
    .map(([name, samples]) => `${(100 * samples / profile.samples.length).toFixed(1).padStart(5)}%  ${name}`).join('\n')
}

/** Self time by where the code lives: our modules, each package, Node's internals, GC. */
function byOwner (profile: Profile): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const totals = new Map<string, number>()
  for (const id of profile.samples) {
    const { url, functionName } = byId.get(id)!.callFrame
    const owner = url === ''
      ? `(${functionName.replace(/[()]/g, '') || 'native'})`
      : url.includes('node_modules/')
        ? url.replace(/^.*node_modules\/((@[^/]+\/)?[^/]+).*$/, '$1')
        : url.startsWith('node:') ? 'node internals' : url.replace(/^file:\/\/.*?\/(plugin|gateway|bench)\//, '$1/').replace(/\/[^/]*$/, '/')
    totals.set(owner, (totals.get(owner) ?? 0) + 1)
  }
  const busy = profile.samples.length - (totals.get('(idle)') ?? 0)
  return [...totals].filter(([owner]) => owner !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, 16)
    .map(([owner, samples]) => `${(100 * samples / busy).toFixed(1).padStart(5)}% of busy  ${owner}`).join('\n')
}

pinSelf()
const redis = kind === 'gateway-memory' || kind === 'proxy' ? undefined : await startRedis()
const upstream = await startServer('upstream', 1)
const args = [`http://127.0.0.1:${upstream.ready.port}`, redis?.url ?? '']
const profiling = ['--cpu-prof', `--cpu-prof-dir=${directory}`]
const target = kind === 'proxy' ? await startServer(kind, 0, args, profiling) : await startGateway(kind as GatewayKind, 0, args, profiling)
const base = `http://127.0.0.1:${target.ready.port}`
const setupRequest = isGatewayReady(target.ready) ? signed(base, '/api/profile', target.ready) : undefined
const result = await runLoad({ url: `${base}/api/profile`, seconds: Number(seconds), connections: 50, setupRequest })
await target.stop('SIGTERM')
await upstream.stop()
redis?.stop()
// --cpu-prof writes one profile per thread (a loader, when one runs, has its own): the main thread is thread 0.
const written = (await readdir(directory)).filter((name) => name.endsWith('.cpuprofile') && name.includes(`.${target.child.pid!}.`))
const file = written.find((name) => name.includes(`.${target.child.pid!}.0.`))!
const profile = JSON.parse(await readFile(directory + file, 'utf8')) as Profile
for (const other of written) if (other !== file) await rm(directory + other)
const steps = stepsTable(stepsPerRequest(profile, result.requests))
process.stdout.write(`${kind}: ${result.rps.toFixed(0)} req/s, p99 ${result.p99.toFixed(2)} ms\nprofile: bench/results/${file}\n\nCPU per request by step (under the profiler, which adds its own cost):\n${steps}\n\n${byOwner(profile)}\n\n${topSelfTime(profile)}\n`)
if (process.argv.includes('--discard')) await rm(directory + file)
