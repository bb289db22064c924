// The benchmark's quick run as a smoke test: every scenario runs, without errors. Not a speed check.
import { once } from 'node:events'
import { readFile, rm } from 'node:fs/promises'
import t from 'tap'
import type { Report } from '../bench/report.js'
import { spawnSource } from './helpers/source.js'

t.setTimeout(300_000)

t.test('npm run bench -- --quick runs every scenario without errors', async (t) => {
  const child = spawnSource('bench/run.ts', ['--quick'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => { output += String(chunk) })
  child.stderr!.on('data', (chunk: Buffer) => { output += String(chunk) })
  const [code] = await once(child, 'exit') as [number | null]
  t.equal(code, 0, 'the bench exits 0', code === 0 ? {} : { output })
  const file = /^results: (.+\.json)$/m.exec(output)?.[1]
  if (file === undefined) return t.fail(`no results file named in:\n${output}`)
  t.teardown(async () => await Promise.all([rm(file, { force: true }), rm(file.replace(/\.json$/, '.svg'), { force: true })]))
  const report = JSON.parse(await readFile(file, 'utf8')) as Report
  t.equal(report.quick, true)
  t.ok(report.cores >= 1 && report.node === process.version, 'machine facts recorded')
  t.ok((await readFile(file.replace(/\.json$/, '.svg'), 'utf8')).startsWith('<svg'), 'the chart is written beside it')
  t.same(report.scenarios.map((scenario) => scenario.id), ['1', '2', '3', '4', '4q', '5', '6a', '6b', '7', '8a', '8b', '9', '10', '11', '12a', '12b'])
  for (const scenario of report.scenarios) {
    t.equal(scenario.errors, 0, `${scenario.id} ${scenario.name}: no connection errors`)
    t.ok(scenario.rps > 0, `${scenario.id}: requests were answered`)
    const rejections = scenario.id.startsWith('6')
    t.equal(scenario.non2xx > 0, rejections, `${scenario.id}: ${rejections ? 'every request rejected' : 'every request a 2xx'} (${scenario.non2xx} non-2xx)`)
  }
  t.equal(report.targets.length, 13, 'every target is reported')
})
