import { mkdir, writeFile } from 'node:fs/promises'

export interface ScenarioResult {
  id: string
  name: string
  rps: number
  p50: number
  p99: number
  errors: number
  non2xx: number
  /** Gateway (or proxy) CPU time per request, microseconds. */
  cpuPerRequest: number
  /** Redis commands per request, for the scenarios on Redis. */
  redisPerRequest?: number
  /** rps ÷ the baseline's rps. */
  ratio?: number
  rounds: number
}

export interface Target {
  name: string
  value: number
  goal: string
  met: boolean
}

export interface Report {
  date: string
  quick: boolean
  cores: number
  node: string
  pinning: string
  secondsPerRun: number
  connections: number
  scenarios: ScenarioResult[]
  targets: Target[]
}

const fixed = (value: number, digits: number): string => value.toFixed(digits)

export function table (report: Report): string {
  const head = ['scenario', 'req/s', 'ratio', 'p50 ms', 'p99 ms', 'CPU µs/req', 'Redis/req', 'errors', 'non-2xx']
  const rows = report.scenarios.map((s) => [
    `${s.id} ${s.name}`, fixed(s.rps, 0), s.ratio === undefined ? '' : fixed(s.ratio, 3), fixed(s.p50, 3), fixed(s.p99, 3),
    fixed(s.cpuPerRequest, 1), s.redisPerRequest === undefined ? '' : fixed(s.redisPerRequest, 2), String(s.errors), String(s.non2xx)
  ])
  const widths = head.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)))
  const line = (cells: string[]): string => `| ${cells.map((cell, column) => column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)).join(' | ')} |`
  const targets = report.targets.map((target) => `| ${target.met ? 'met' : 'MISSED'} | ${target.name} | ${target.goal} | ${fixed(target.value, 3)} |`)
  return [
    line(head), `|${widths.map((width, column) => column === 0 ? `:${'-'.repeat(width + 1)}` : `${'-'.repeat(width + 1)}:`).join('|')}|`, ...rows.map(line),
    '', '| | target | goal | measured |', '|---|---|---|---:|', ...targets
  ].join('\n')
}

function escapeXml (text: string): string {
  return text.replace(/[<>&"]/g, (character) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[character]!)
}

/** A horizontal bar chart of each scenario's throughput relative to the plain proxy. */
export function chart (report: Report): string {
  const bars = report.scenarios.filter((s) => s.ratio !== undefined)
  const width = 760
  const left = 300
  const scale = (width - left - 80) / Math.max(1.2, ...bars.map((s) => s.ratio!))
  const rowHeight = 30
  const height = 60 + bars.length * rowHeight + 30
  const baselineX = left + scale
  const rows = bars.map((s, index) => {
    const y = 50 + index * rowHeight
    const barWidth = Math.max(1, s.ratio! * scale)
    return `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${escapeXml(`${s.id} ${s.name}`)}</text>
<rect x="${left}" y="${y}" width="${barWidth.toFixed(1)}" height="20" fill="${s.id === '2' ? '#888' : '#3b6ede'}"/>
<text x="${left + barWidth + 6}" y="${y + 15}">${s.ratio!.toFixed(3)}</text>`
  }).join('\n')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="13">
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="24" font-size="15" font-weight="bold">${escapeXml(`macgate: throughput ÷ plain proxy (${report.cores} cores, Node ${report.node}, ${report.pinning})`)}</text>
${rows}
<line x1="${baselineX}" y1="40" x2="${baselineX}" y2="${height - 25}" stroke="#c00" stroke-dasharray="4 3"/>
<text x="${baselineX}" y="${height - 10}" text-anchor="middle" fill="#c00">1.0 = plain proxy</text>
</svg>
`
}

/** bench/results/<date>.json and .svg, and latest.* beside them. */
export async function writeReport (report: Report, directory: URL): Promise<string> {
  await mkdir(directory, { recursive: true })
  const stamp = report.date.replace(/[:.]/g, '-')
  const base = report.quick ? `quick-${stamp}` : stamp
  const json = `${JSON.stringify(report, null, 2)}\n`
  const svg = chart(report)
  await writeFile(new URL(`${base}.json`, directory), json)
  await writeFile(new URL(`${base}.svg`, directory), svg)
  if (!report.quick) {
    await writeFile(new URL('latest.json', directory), json)
    await writeFile(new URL('latest.svg', directory), svg)
    await writeFile(new URL('latest.md', directory), `${table(report)}\n`)
  }
  return new URL(`${base}.json`, directory).pathname
}
