// `npm run bench -- --smoke`: the benchmark still runs, for CI after the tests (.ci/run). Not a
// speed check, no ratio is judged. Two quick runs, each in a child as an operator starts it:
// `--quick --pair` (the baseline and the gateway as shipped, one round of 1 s), and the ladder's
// rungs whose counts say something on their own (`--ladder --quick --processes 2 --rungs ...`, each
// rung also counted in a fresh process). Each run's output
// and results file are checked for what every full run reports; each failed check is printed, and
// any one exits non-zero.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import type { LadderReport } from './ladder-report.ts'
import { childNodeArgs, sibling } from './paths.ts'
import type { Report } from './report.ts'

/** A check: whether it holds, and what it checks (printed when it does not). */
type Check = [holds: boolean, what: string]

const finite = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value)

const ids = (items: Array<{ id: string }>): string => items.map((item) => item.id).join(',')

/** The pair's report: both scenarios answered every request; the shipped one has its ratios and targets. */
export function pairChecks (report: Report): Check[] {
  const shipped = report.scenarios.find((scenario) => scenario.id === '10')
  return [
    [report.quick, 'the report says quick'],
    [report.cores >= 1 && report.node === process.version, 'machine facts recorded'],
    [report.rounds === 1, 'one round in a quick run'],
    [ids(report.scenarios) === '2,10', `scenarios 2 and 10 (${ids(report.scenarios)})`],
    ...report.scenarios.flatMap((scenario): Check[] => [
      [scenario.errors === 0, `${scenario.id} ${scenario.name}: no connection errors (${scenario.errors})`],
      [scenario.rps > 0 && scenario.bestRps > 0, `${scenario.id}: requests were answered`],
      [scenario.bestCpuPerRequest > 0 && scenario.disturbedRounds <= scenario.rounds, `${scenario.id}: best-of CPU and disturbed rounds reported`],
      [scenario.non2xx === 0, `${scenario.id}: every request a 2xx (${scenario.non2xx} non-2xx)`]
    ]),
    [shipped !== undefined && finite(shipped.ratio) && finite(shipped.bestRatio) && finite(shipped.bestCpuRatio), '10: ratio, bestRatio and bestCpuRatio beside each other'],
    [report.targets.length === 2, 'both of the shipped gateway\'s targets are reported'],
    [report.targets.every((target) => finite(target.value)), 'every target has a measured value']
  ]
}

/** The rungs the smoke climbs: the route check, the MAC check and Redis nonces, over the plain proxy. */
export const SMOKE_RUNGS = ['route-check', 'mac-check', 'redis-nonces']

/** The rungs' report: every request a 2xx, everything counted, and what the counts must show. */
export function ladderChecks (report: LadderReport): Check[] {
  const [, routeCheck, macCheck, redis] = report.rungs
  return [
    [report.quick, 'the report says quick'],
    [report.countedProcesses === 2, `counted in two processes a rung (${report.countedProcesses})`],
    [ids(report.rungs) === 'L0,L2,L3,L7', `rungs L0, L2, L3 and L7 (${ids(report.rungs)})`],
    ...report.rungs.flatMap((rung): Check[] => [
      [rung.errors + rung.non2xx === 0, `${rung.id} ${rung.name}: every request a 2xx`],
      [rung.counts.bytes > 0 && rung.counts.writes > 0, `${rung.id}: heap bytes and write calls counted per request`],
      [rung.processBytes.length === report.countedProcesses && rung.processBytes.every((bytes) => bytes > 0), `${rung.id}: counted in its own process and a fresh one (${rung.processBytes.length} of ${report.countedProcesses})`],
      [finite(rung.addedCpu) && finite(rung.bestRatio), `${rung.id}: what it adds, and its ratio`]
    ]),
    // The counting pass's own two IPC answers make a promise or two, over thousands of requests.
    [routeCheck !== undefined && routeCheck.counts.promises < 0.01, 'a proxied request through the gateway\'s callback hooks makes no promise'],
    [macCheck !== undefined && macCheck.counts.promises < 0.01, 'the MAC check on a hot LRU with embedded nonces makes none either'],
    [redis !== undefined && redis.counts.promises > 0, 'Redis nonces do: the promise hook sees them'],
    [macCheck !== undefined && routeCheck !== undefined && macCheck.counts.bytes > routeCheck.counts.bytes, 'the MAC check allocates']
  ]
}

/** The bench in a child with `args`, then `checksOf` its results file: what failed, and its output. */
async function checkedRun<R> (args: string[], checksOf: (report: R) => Check[]): Promise<{ failures: string[], output: string }> {
  const child = spawn(process.execPath, [...childNodeArgs, sibling('run'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += String(chunk) })
  child.stderr.on('data', (chunk: Buffer) => { output += String(chunk) })
  const [code] = await once(child, 'exit') as [number | null]
  const file = /^results: (.+\.json)$/m.exec(output)?.[1]
  const chart = file === undefined ? '' : await readFile(file.replace(/\.json$/, '.svg'), 'utf8').catch(() => '')
  const checks: Check[] = [
    [code === 0, `the bench exits 0 (exited ${code})`],
    [/round 1\/1 done \(others used up to \d+\.\d\d cores/.test(output), 'each round says how busy others kept the machine'],
    [file !== undefined, 'a results file is named'],
    [chart.startsWith('<svg'), 'the chart is written beside the results file'],
    ...(file === undefined ? [] : checksOf(JSON.parse(await readFile(file, 'utf8')) as R))
  ]
  return { failures: checks.filter(([holds]) => !holds).map(([, what]) => `${args.join(' ')}: ${what}`), output }
}

/** Both runs, one after the other; a non-zero exit code on any failed check. */
export async function runSmoke (): Promise<void> {
  const started = Date.now()
  const runs = [
    await checkedRun(['--quick', '--pair'], pairChecks),
    await checkedRun(['--ladder', '--quick', '--processes', '2', '--rungs', SMOKE_RUNGS.join(',')], ladderChecks)
  ]
  const output = runs.map((run) => run.output).join('\n')
  const failures = runs.flatMap((run) => run.failures)
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  if (failures.length > 0) {
    process.stderr.write(`${output}\nbench smoke FAILED (${seconds} s):\n${failures.map((failure) => `- ${failure}`).join('\n')}\n`)
    process.exitCode = 1
    return
  }
  process.stdout.write(`${output}\nbench smoke: every check holds (${seconds} s)\n`)
}
