import { writeResultFiles } from './result-files.ts'

export interface ScenarioResult {
  id: string
  name: string
  rps: number
  p50: number
  p99: number
  errors: number
  non2xx: number
  /** Gateway (or proxy) CPU time per request, microseconds (median over rounds, as rps, p50 and p99). */
  cpuPerRequest: number
  /** The best undisturbed round's req/s, and the least CPU µs per request and p99 of those rounds. */
  bestRps: number
  bestCpuPerRequest: number
  bestP99: number
  /** (max − min) ÷ median over every round, of req/s and of CPU per request. */
  rpsSpread: number
  cpuSpread: number
  /** Rounds in which other processes used more than a quarter of a core: left out of the best-of. */
  disturbedRounds: number
  /** Redis commands per request, for the scenarios on Redis. */
  redisPerRequest?: number
  /** rps ÷ the baseline's rps (medians). */
  ratio?: number
  /** bestRps ÷ the baseline's bestRps. */
  bestRatio?: number
  /** The baseline's bestCpuPerRequest ÷ this one's: 1 costs as much CPU per request as the plain proxy. */
  bestCpuRatio?: number
  /** Of the measured requests' token lookups, the share the token LRU answered (the mix scenario). */
  lruHitRatio?: number
  /** Bytes of log written per measured request (the shipped gateway, logging to a file). */
  logBytesPerRequest?: number
  rounds: number
}

/** The scenario every ratio is relative to: the plain proxy. */
export const BASELINE_ID = '2'

/** A goal as reported: its name, its bound as text, the measured value and whether it holds. */
export interface TargetResult {
  name: string
  value: number
  goal: string
  met: boolean
}

/** What a run of the bench was, for its report and the ladder's alike. */
export interface BenchRun {
  date: string
  quick: boolean
  cores: number
  node: string
  pinning: string
  secondsPerRun: number
  /** Rounds each alternated scenario (or rung) ran (after a warm-up). */
  rounds: number
  connections: number
}

export interface Report extends BenchRun {
  scenarios: ScenarioResult[]
  targets: TargetResult[]
  /** The mix scenario's live tokens, made once before any measurement, and its token LRU's size. */
  populationTokens?: number
  tokenLruMax?: number
  /** How long making them took (outside the measured time), seconds. */
  populationSeconds?: number
}

const fixed = (value: number, digits: number): string => value.toFixed(digits)

const count = (value: number): string => value.toLocaleString('en-US')

/** What some scenarios measure beyond the columns, a line each, under the table. */
function notes (report: Report): string[] {
  return report.scenarios.flatMap((s) => [
    ...(s.lruHitRatio === undefined ? [] : [`${s.id} ${s.name}: token LRU hit ratio ${fixed(s.lruHitRatio, 3)} over the measured requests`]),
    ...(s.lruHitRatio === undefined || report.populationSeconds === undefined
      ? []
      : [`${s.id} population: ${count(report.populationTokens ?? 0)} live tokens, LRU of ${count(report.tokenLruMax ?? 0)}, created in ${fixed(report.populationSeconds, 1)} s (pipelined, outside the measured time)`]),
    ...(s.logBytesPerRequest === undefined ? [] : [`${s.id} ${s.name}: ${fixed(s.logBytesPerRequest, 0)} bytes of log per request`])
  ])
}

export function table (report: Report): string {
  const head = ['scenario', 'best req/s', 'median', 'spread', 'best ÷ proxy', 'median ÷ proxy', 'least CPU µs/req', 'median', 'spread', 'CPU: proxy ÷ it', 'p50 ms', 'p99 ms', 'Redis/req', 'errors', 'non-2xx', 'disturbed']
  const optional = (value: number | undefined, digits: number): string => value === undefined ? '' : fixed(value, digits)
  const percent = (value: number): string => `${fixed(100 * value, 0)}%`
  const rows = report.scenarios.map((s) => [
    `${s.id} ${s.name}`, fixed(s.bestRps, 0), fixed(s.rps, 0), percent(s.rpsSpread), optional(s.bestRatio, 3), optional(s.ratio, 3),
    fixed(s.bestCpuPerRequest, 1), fixed(s.cpuPerRequest, 1), percent(s.cpuSpread), optional(s.bestCpuRatio, 3), fixed(s.p50, 3), fixed(s.p99, 3),
    optional(s.redisPerRequest, 2), String(s.errors), String(s.non2xx), `${s.disturbedRounds}/${s.rounds}`
  ])
  const widths = head.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)))
  const line = (cells: string[]): string => `| ${cells.map((cell, column) => column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)).join(' | ')} |`
  const targets = report.targets.map((target) => `| ${target.met ? 'met' : 'MISSED'} | ${target.name} | ${target.goal} | ${fixed(target.value, 3)} |`)
  const noted = notes(report)
  return [
    line(head), `|${widths.map((width, column) => column === 0 ? `:${'-'.repeat(width + 1)}` : `${'-'.repeat(width + 1)}:`).join('|')}|`, ...rows.map(line),
    ...(noted.length === 0 ? [] : ['', ...noted.map((note) => `- ${note}`)]),
    '', '| | target | goal | measured |', '|---|---|---|---:|', ...targets
  ].join('\n')
}

function escapeXml (text: string): string {
  return text.replace(/[<>&"]/g, (character) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[character]!)
}

/**
 * A horizontal bar chart of each scenario's best throughput relative to the plain proxy's best,
 * with the ratio goals (by scenario id) marked on their bars.
 */
export function chart (report: Report, goals: ReadonlyMap<string, number>): string {
  const bars = report.scenarios.filter((s) => s.bestRatio !== undefined).map((s) => ({ ...s, ratio: s.bestRatio }))
  const width = 760
  const left = 300
  const scale = (width - left - 80) / Math.max(1.2, ...bars.map((s) => s.ratio!))
  const rowHeight = 30
  const top = 64
  const height = top + bars.length * rowHeight + 40
  const baselineX = left + scale
  const rows = bars.map((s, index) => {
    const y = top + index * rowHeight
    const barWidth = Math.max(1, s.ratio! * scale)
    const goal = goals.get(s.id)
    const goalMark = goal === undefined ? '' : `<line x1="${left + goal * scale}" y1="${y - 3}" x2="${left + goal * scale}" y2="${y + 23}" stroke="#000" stroke-width="2"/>`
    return `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${escapeXml(`${s.id} ${s.name}`)}</text>
<rect x="${left}" y="${y}" width="${barWidth.toFixed(1)}" height="20" fill="${s.id === BASELINE_ID ? '#888' : '#3b6ede'}"/>${goalMark}
<text x="${left + Math.max(barWidth, (goal ?? 0) * scale) + 6}" y="${y + 15}">${s.ratio!.toFixed(3)}</text>`
  }).join('\n')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="13">
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="22" font-size="15" font-weight="bold">macgate: signed-request throughput ÷ plain proxy (best undisturbed rounds)</text>
<text x="10" y="42" font-size="12" fill="#555">${escapeXml(`${report.date.slice(0, 16)}Z · ${report.cores} cores · Node ${report.node} · ${report.pinning}`)}</text>
${rows}
<line x1="${baselineX}" y1="${top - 8}" x2="${baselineX}" y2="${height - 30}" stroke="#c00" stroke-dasharray="4 3"/>
<text x="${baselineX}" y="${height - 14}" text-anchor="middle" fill="#c00">1.0 = plain proxy</text>
<text x="${width - 10}" y="${height - 14}" text-anchor="end" fill="#000">| goal</text>
</svg>
`
}

/** bench/results/<date>.json and .svg, and latest.* beside them; `goals` as for the chart. */
export async function writeReport (report: Report, directory: URL, goals: ReadonlyMap<string, number>): Promise<string> {
  const stamp = report.date.replace(/[:.]/g, '-')
  const name = report.quick ? `quick-${stamp}` : stamp
  return await writeResultFiles(directory, { name, latest: 'latest', quick: report.quick, report, svg: chart(report, goals), table: () => table(report) })
}
