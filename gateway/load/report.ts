// What a `macgate load` run reports: one JSON object (--json, --out), a table for a person, and
// the live line while it runs.
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { chart } from './chart.ts'
import type { LoadProgress, LoadResult, Sample } from './run.ts'

export interface LoadReport {
  date: string
  /** The target's origin: never credentials, which the command refuses in a URL. */
  url: string
  mode: 'api' | 'token-endpoint'
  method: string
  paths: Array<{ path: string, weight: number }>
  connections: number
  /** What was asked: a duration (s), or a number of requests; and an offered rate if any. */
  duration?: number
  amount?: number
  rate?: number
  /** The signing population: how many tokens, how many signed at least one request, and how. */
  tokens?: { count: number, used: number, distribution: 'round-robin' | 'zipf' }
  grantType?: string
  requests: number
  seconds: number
  rps: number
  latencyMs: { p50: number, p90: number, p99: number, max: number, mean: number }
  errors: number
  timeouts: number
  non2xx: number
  statuses: Record<string, number>
  errorCodes: Record<string, number>
  timeline: Sample[]
}

export type ReportSettings = Omit<LoadReport, 'date' | 'requests' | 'seconds' | 'rps' | 'latencyMs' | 'errors' | 'timeouts' | 'non2xx' | 'statuses' | 'errorCodes' | 'timeline'>

export function buildReport (settings: ReportSettings, result: LoadResult, date: Date): LoadReport {
  const round = (value: number, digits = 3): number => Number(value.toFixed(digits))
  return {
    date: date.toISOString(),
    ...settings,
    requests: result.requests,
    seconds: round(result.seconds),
    rps: round(result.rps, 1),
    latencyMs: { p50: round(result.p50), p90: round(result.p90), p99: round(result.p99), max: round(result.max), mean: round(result.mean) },
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    statuses: result.statuses,
    errorCodes: result.errorCodes,
    timeline: result.timeline.map((sample) => ({ second: round(sample.second), requests: sample.requests, rps: round(sample.rps, 1), p99: round(sample.p99) }))
  }
}

const count = (value: number): string => Math.round(value).toLocaleString('en-US')
const ms = (value: number): string => value < 10 ? value.toFixed(2) : value < 100 ? value.toFixed(1) : value.toFixed(0)

/** `401: 12, 503: 3`, the biggest first. */
function counts (byKey: Record<string, number>): string {
  return Object.entries(byKey).sort(([, a], [, b]) => b - a).map(([key, value]) => `${key}: ${count(value)}`).join(', ')
}

function non2xxStatuses (statuses: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(statuses).filter(([status]) => !status.startsWith('2')))
}

/** The live line: requests, the last second's rate, p50/p99 so far, refusals by status and by code. */
export function progressLine (progress: LoadProgress): string {
  const refused = progress.non2xx === 0
    ? 'non-2xx 0'
    : `non-2xx ${count(progress.non2xx)} (${counts(non2xxStatuses(progress.statuses))}${Object.keys(progress.errorCodes).length === 0 ? '' : `; codes ${counts(progress.errorCodes)}`})`
  return [
    `${progress.seconds.toFixed(0)}s`, `${count(progress.requests)} req`, `${count(progress.rps)} req/s`,
    `p50 ${ms(progress.p50)} ms`, `p99 ${ms(progress.p99)} ms`, refused,
    ...(progress.errors === 0 ? [] : [`errors ${count(progress.errors)}`])
  ].join('  ')
}

function alignedTable (head: string[], rows: string[][]): string[] {
  const widths = head.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)))
  const line = (cells: string[]): string => `| ${cells.map((cell, column) => column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)).join(' | ')} |`
  return [line(head), `|${widths.map((width, column) => column === 0 ? `:${'-'.repeat(width + 1)}` : `${'-'.repeat(width + 1)}:`).join('|')}|`, ...rows.map(line)]
}

/** The run's summary for a person: what was loaded, then throughput and latency, statuses and codes. */
export function table (report: LoadReport): string {
  // The path, or the mix with each path's weight; a token endpoint run (one path) adds its grant type.
  const paths = report.paths.map((p) => report.paths.length === 1 ? p.path : `${p.path}×${p.weight}`).join(' ')
  const what = `${report.method} ${paths}${report.grantType === undefined ? '' : ` (${report.grantType})`}`
  const tokens = report.tokens === undefined ? '' : `, ${count(report.tokens.used)} of ${count(report.tokens.count)} tokens (${report.tokens.distribution})`
  const main = alignedTable(
    ['requests', 'seconds', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'non-2xx', 'errors'],
    [[count(report.requests), report.seconds.toFixed(1), count(report.rps), ms(report.latencyMs.p50), ms(report.latencyMs.p90), ms(report.latencyMs.p99), ms(report.latencyMs.max), count(report.non2xx), count(report.errors)]]
  )
  const byCount = (byKey: Record<string, number>): string[][] => Object.entries(byKey).sort(([, a], [, b]) => b - a).map(([key, value]) => [key, count(value)])
  const codes = byCount(report.errorCodes)
  return [
    `macgate load: ${report.url} ${what}, ${report.connections} connections${tokens}`,
    '',
    ...main,
    '',
    ...alignedTable(['status', 'count'], byCount(report.statuses)),
    ...(codes.length === 0 ? [] : ['', ...alignedTable(['error code', 'count'], codes)]),
    ''
  ].join('\n')
}

/** `<directory>/load-<date>.json` and `.svg`; resolves to both paths. */
export async function writeReport (report: LoadReport, directory: string): Promise<{ json: string, svg: string }> {
  await mkdir(directory, { recursive: true })
  const base = join(directory, `load-${report.date.replace(/[:.]/g, '-')}`)
  const paths = { json: `${base}.json`, svg: `${base}.svg` }
  await writeFile(paths.json, `${JSON.stringify(report, null, 2)}\n`)
  await writeFile(paths.svg, chart(report))
  return paths
}
