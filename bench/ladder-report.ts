// The ladder's report (bench/ladder.ts): the JSON, a table and a chart of where each rung's
// microseconds go, written beside the bench's own results.
import type { Counts } from './counters.ts'
import { writeResultFiles } from './result-files.ts'
import type { BenchRun, ScenarioResult } from './report.ts'

export interface LadderRung extends ScenarioResult {
  /** Per request, from the target's counting passes: bytes and writes the median over its processes. */
  counts: Counts
  /** Heap bytes per request counted in each of the rung's processes, its own first. */
  processBytes: number[]
  /** Least CPU µs per request over the rung below's least (0 for the first rung). */
  addedCpu: number
  addedCounts: Counts
}

export interface LadderReport extends BenchRun {
  /** Requests of each counting pass. */
  countedRequests: number
  /** Processes each rung's bytes and writes are counted in (the population rung's: one). */
  countedProcesses: number
  rungs: LadderRung[]
}

const fixed = (value: number, digits: number): string => value.toFixed(digits)
const signedFixed = (value: number, digits: number): string => `${value >= 0 ? '+' : ''}${value.toFixed(digits)}`

export function ladderTable (report: LadderReport): string {
  const head = ['rung', 'least CPU µs/req', 'added', 'median CPU', 'best req/s', 'best ÷ proxy', 'heap bytes/req', 'spread', 'added', 'promises/req', 'added', 'ticks/req', 'writes/req', 'disturbed']
  const rows = report.rungs.map((r) => [
    `${r.id} ${r.name}`, fixed(r.bestCpuPerRequest, 1), signedFixed(r.addedCpu, 1), fixed(r.cpuPerRequest, 1), fixed(r.bestRps, 0), fixed(r.bestRatio ?? 1, 3),
    fixed(r.counts.bytes, 0), fixed(Math.max(...r.processBytes) - Math.min(...r.processBytes), 0), signedFixed(r.addedCounts.bytes, 0), fixed(r.counts.promises, 2), signedFixed(r.addedCounts.promises, 2),
    fixed(r.counts.ticks, 2), fixed(r.counts.writes, 2), `${r.disturbedRounds}/${r.rounds}`
  ])
  const widths = head.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)))
  const line = (cells: string[]): string => `| ${cells.map((cell, column) => column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)).join(' | ')} |`
  const rule = `|${widths.map((width, column) => column === 0 ? `:${'-'.repeat(width + 1)}` : `${'-'.repeat(width + 1)}:`).join('|')}|`
  return [line(head), rule, ...rows.map(line)].join('\n')
}

function escapeXml (text: string): string {
  return text.replace(/[<>&"]/g, (character) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[character]!)
}

/** A waterfall: each rung's least CPU µs per request, the part it adds over the rung below in colour. */
export function ladderChart (report: LadderReport): string {
  const width = 860
  const left = 420
  const most = Math.max(1, ...report.rungs.map((r) => r.bestCpuPerRequest))
  const scale = (width - left - 90) / most
  const rowHeight = 30
  const top = 64
  const height = top + report.rungs.length * rowHeight + 30
  const rows = report.rungs.map((r, index) => {
    const y = top + index * rowHeight
    const below = index === 0 ? 0 : Math.min(r.bestCpuPerRequest, report.rungs[index - 1]!.bestCpuPerRequest)
    const added = Math.abs(r.addedCpu)
    return `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${escapeXml(`${r.id} ${r.name}`)}</text>
<rect x="${left}" y="${y}" width="${Math.max(1, below * scale).toFixed(1)}" height="20" fill="#bbb"/>
<rect x="${(left + below * scale).toFixed(1)}" y="${y}" width="${Math.max(1, added * scale).toFixed(1)}" height="20" fill="${r.addedCpu >= 0 ? '#d9534f' : '#3a9b4a'}"/>
<text x="${(left + Math.max(below + added, r.bestCpuPerRequest) * scale + 6).toFixed(1)}" y="${y + 15}">${fixed(r.bestCpuPerRequest, 1)} (${signedFixed(r.addedCpu, 1)})</text>`
  }).join('\n')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="13">
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="22" font-size="15" font-weight="bold">macgate ladder: least CPU µs per request, and what each rung adds</text>
<text x="10" y="42" font-size="12" fill="#555">${escapeXml(`${report.date.slice(0, 16)}Z · ${report.cores} cores · Node ${report.node} · ${report.pinning} · best of ${report.rounds} rounds`)}</text>
${rows}
</svg>
`
}

/** bench/results/ladder-<date>.json and .svg (quick-ladder-… for a quick run), and latest-ladder.* for a full one. */
export async function writeLadder (report: LadderReport, directory: URL): Promise<string> {
  const name = `${report.quick ? 'quick-' : ''}ladder-${report.date.replace(/[:.]/g, '-')}`
  return await writeResultFiles(directory, { name, latest: 'latest-ladder', quick: report.quick, report, svg: ladderChart(report), table: () => ladderTable(report) })
}
