// The benchmark's quick runs as smoke tests: every scenario and every rung of the ladder runs,
// without errors, and reports what the full runs report. Not a speed check: no ratio is judged.
import { once } from 'node:events'
import { readFile, rm } from 'node:fs/promises'
import t, { type Test } from 'tap'
import type { LadderReport } from '../bench/ladder-report.js'
import type { Report } from '../bench/report.js'
import { spawnSource } from './helpers/source.js'

t.setTimeout(600_000)

/** Runs the bench with `args`; resolves to the results file's report, removed (with its chart) at the end. */
async function quickRun<R> (t: Test, args: string[]): Promise<R | undefined> {
  const child = spawnSource('bench/run.ts', args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => { output += String(chunk) })
  child.stderr!.on('data', (chunk: Buffer) => { output += String(chunk) })
  const [code] = await once(child, 'exit') as [number | null]
  t.equal(code, 0, 'the bench exits 0', code === 0 ? {} : { output })
  const file = /^results: (.+\.json)$/m.exec(output)?.[1]
  if (file === undefined) {
    t.fail(`no results file named in:\n${output}`)
    return undefined
  }
  t.teardown(async () => await Promise.all([rm(file, { force: true }), rm(file.replace(/\.json$/, '.svg'), { force: true })]))
  t.ok((await readFile(file.replace(/\.json$/, '.svg'), 'utf8')).startsWith('<svg'), 'the chart is written beside it')
  t.match(output, /round 1\/1 done \(others used up to \d+\.\d\d cores/, 'each round says how busy others kept the machine')
  return JSON.parse(await readFile(file, 'utf8')) as R
}

const finite = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value)

t.test('npm run bench -- --quick runs every scenario without errors', async (t) => {
  const report = await quickRun<Report>(t, ['--quick'])
  if (report === undefined) return
  t.equal(report.quick, true)
  t.ok(report.cores >= 1 && report.node === process.version, 'machine facts recorded')
  t.equal(report.rounds, 1, 'one round in a quick run')
  t.same(report.scenarios.map((scenario) => scenario.id), ['1', '2', '3', '4', '4q', '5', '6a', '6b', '7', '8a', '8b', '9', '10', '11', '12a', '12b'])
  for (const scenario of report.scenarios) {
    t.equal(scenario.errors, 0, `${scenario.id} ${scenario.name}: no connection errors`)
    t.ok(scenario.rps > 0 && scenario.bestRps > 0, `${scenario.id}: requests were answered`)
    t.ok(scenario.bestCpuPerRequest > 0 && scenario.disturbedRounds <= scenario.rounds, `${scenario.id}: best-of CPU and disturbed rounds reported`)
    const rejections = scenario.id.startsWith('6')
    t.equal(scenario.non2xx > 0, rejections, `${scenario.id}: ${rejections ? 'every request rejected' : 'every request a 2xx'} (${scenario.non2xx} non-2xx)`)
  }
  for (const id of ['2', '3', '4', '5', '9', '10', '11', '12a', '12b']) {
    const scenario = report.scenarios.find((one) => one.id === id)!
    t.ok(finite(scenario.ratio) && finite(scenario.bestRatio) && finite(scenario.bestCpuRatio), `${id}: ratio, bestRatio and bestCpuRatio beside each other`)
  }
  t.equal(report.targets.length, 13, 'every target is reported')
  t.ok(report.targets.every((target) => finite(target.value)), 'every target has a measured value')
})

t.test('npm run bench -- --ladder --quick climbs every rung without errors, counting what each adds', async (t) => {
  const report = await quickRun<LadderReport>(t, ['--ladder', '--quick'])
  if (report === undefined) return
  t.equal(report.quick, true)
  t.same(report.rungs.map((rung) => rung.id), ['L0', 'L1', 'L2', 'L3', 'L4', 'L5', 'L6', 'L7', 'L8', 'L9'])
  for (const rung of report.rungs) {
    t.equal(rung.errors + rung.non2xx, 0, `${rung.id} ${rung.name}: every request a 2xx`)
    t.ok(rung.counts.bytes > 0 && rung.counts.writes > 0, `${rung.id}: heap bytes and write calls counted per request`)
    t.ok(finite(rung.addedCpu) && finite(rung.bestRatio), `${rung.id}: what it adds, and its ratio`)
  }
  const [, , routeCheck, macCheck, , , , redis] = report.rungs
  // The counting pass's own two IPC answers make a promise or two, over thousands of requests.
  t.ok(routeCheck!.counts.promises < 0.01, 'a proxied request through the gateway\'s callback hooks makes no promise')
  t.ok(macCheck!.counts.promises < 0.01, 'the MAC check on a hot LRU with embedded nonces makes none either')
  t.ok(redis!.counts.promises > 0, 'Redis nonces do: the promise hook sees them')
  t.ok(macCheck!.counts.bytes > routeCheck!.counts.bytes, 'the MAC check allocates')
})
