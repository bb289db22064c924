// The SVG of a `macgate load` run, in the benchmark's look (bench/report.ts): throughput and p99,
// one point per second, in two panels over the same time axis.
import type { Sample } from './run.ts'

/** What the chart draws of a run: the report's (report.ts, which draws it with this). */
export interface ChartedRun {
  date: string
  url: string
  method: string
  paths: Array<{ path: string }>
  connections: number
  requests: number
  seconds: number
  non2xx: number
  timeline: Sample[]
}

export function escapeXml (text: string): string {
  return text.replace(/[<>&"]/g, (character) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[character]!)
}

const WIDTH = 760
const LEFT = 70
const RIGHT = 20
const PANEL = 150

/**
 * A round step for about `ticks` grid lines up to `max`: 1, 2 or 5 times the power of ten at or
 * below max / ticks, else 10 times it (which is always at least max / ticks).
 */
function step (max: number, ticks: number): number {
  const raw = max / ticks
  const power = 10 ** Math.floor(Math.log10(raw))
  return [1, 2, 5].map((m) => m * power).find((candidate) => candidate >= raw) ?? 10 * power
}

const label = (value: number): string => value >= 1000 ? value.toLocaleString('en-US', { maximumFractionDigits: 0 }) : String(Number(value.toPrecision(3)))

interface Panel {
  title: string
  values: number[]
  colour: string
  top: number
}

function panel ({ title, values, colour, top }: Panel, seconds: number[], end: number): string {
  const max = Math.max(...values, 0)
  const unit = step(max === 0 ? 1 : max, 4)
  const ceiling = Math.max(unit, Math.ceil(max / unit) * unit)
  const x = (second: number): number => LEFT + (second / end) * (WIDTH - LEFT - RIGHT)
  const y = (value: number): number => top + PANEL - (value / ceiling) * PANEL
  const grid = Array.from({ length: Math.round(ceiling / unit) + 1 }, (_, k) => k * unit).map((value) =>
    `<line x1="${LEFT}" y1="${y(value).toFixed(1)}" x2="${WIDTH - RIGHT}" y2="${y(value).toFixed(1)}" stroke="#ddd"/>
<text x="${LEFT - 6}" y="${(y(value) + 4).toFixed(1)}" text-anchor="end" font-size="11">${label(value)}</text>`).join('\n')
  const points = values.map((value, k) => `${x(seconds[k]!).toFixed(1)},${y(value).toFixed(1)}`).join(' ')
  const line = values.length === 1
    ? `<circle cx="${x(seconds[0]!).toFixed(1)}" cy="${y(values[0]!).toFixed(1)}" r="3" fill="${colour}"/>`
    : `<polyline points="${points}" fill="none" stroke="${colour}" stroke-width="2"/>`
  return `<text x="${LEFT}" y="${top - 8}" font-weight="bold">${escapeXml(title)}</text>
${grid}
${line}`
}

/** Throughput (req/s) above, p99 (ms) below, against seconds since the start. */
export function chart (report: ChartedRun): string {
  const seconds = report.timeline.map((sample) => sample.second)
  const end = Math.max(1, ...seconds)
  const top = 80
  const lower = top + PANEL + 50
  const height = lower + PANEL + 50
  const x = (second: number): number => LEFT + (second / end) * (WIDTH - LEFT - RIGHT)
  const axisStep = step(end, 8)
  const axis = Array.from({ length: Math.floor(end / axisStep) + 1 }, (_, k) => k * axisStep).map((second) =>
    `<text x="${x(second).toFixed(1)}" y="${lower + PANEL + 18}" text-anchor="middle" font-size="11">${label(second)}</text>`).join('\n')
  // The paths of the mix; a token endpoint run has exactly one.
  const what = `${report.method} ${report.paths.map((p) => p.path).join(' ')}`
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="13">
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="22" font-size="15" font-weight="bold">${escapeXml(`macgate load: ${report.url} ${what}`)}</text>
<text x="10" y="42" font-size="12" fill="#555">${escapeXml(`${report.date.slice(0, 16)}Z · ${report.connections} connections · ${report.requests.toLocaleString('en-US')} requests in ${report.seconds.toFixed(1)} s · ${report.non2xx.toLocaleString('en-US')} non-2xx`)}</text>
${panel({ title: 'throughput, req/s', values: report.timeline.map((sample) => sample.rps), colour: '#3b6ede', top }, seconds, end)}
${panel({ title: 'p99 latency, ms', values: report.timeline.map((sample) => sample.p99), colour: '#c05000', top: lower }, seconds, end)}
${axis}
<text x="${WIDTH - RIGHT}" y="${height - 8}" text-anchor="end" font-size="12" fill="#555">seconds since the start</text>
</svg>
`
}
