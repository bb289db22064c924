// What a `macgate load` run reports, in process: the latency histogram, the report object, the
// table, the live line, the SVG chart and the files of --out; edge cases included (a run that got
// no answer, a run of only refusals, a token endpoint run).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { LatencyHistogram } from '../../../gateway/load/histogram.ts'
import { buildReport, progressLine, table, writeReport, type LoadReport, type ReportSettings } from '../../../gateway/load/report.ts'
import { chart, escapeXml } from '../../../gateway/load/chart.ts'
import type { LoadProgress, LoadResult } from '../../../gateway/load/run.ts'

const DATE = new Date('2025-03-04T05:06:07.089Z')

const apiSettings: ReportSettings = {
  url: 'http://127.0.0.1:8080',
  mode: 'api',
  method: 'GET',
  paths: [{ path: '/api/v1/me', weight: 1 }],
  connections: 4,
  amount: 1000,
  tokens: { count: 3, used: 2, distribution: 'zipf' }
}

const tokenSettings: ReportSettings = {
  url: 'http://127.0.0.1:8080',
  mode: 'token-endpoint',
  method: 'POST',
  paths: [{ path: '/oauth2/token', weight: 1 }],
  connections: 2,
  amount: 12,
  grantType: 'refresh_token'
}

/** A run's result; `overrides` for what the test is about. */
function result (overrides: Partial<LoadResult> = {}): LoadResult {
  return {
    requests: 1234,
    rps: 617.04567,
    p50: 1.23456,
    p90: 45.6789,
    p99: 123.4567,
    max: 2345.6789,
    mean: 3.14159,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    statuses: { 200: 1234 },
    errorCodes: {},
    seconds: 2.00049,
    timeline: [{ second: 1.00012, requests: 600, rps: 599.9412, p99: 100.12345 }, { second: 2.00049, requests: 634, rps: 633.7777, p99: 123.4567 }],
    ...overrides
  }
}

/** What a run that got no answer at all returns (runLoad's empty histograms and timeline). */
const EMPTY: Partial<LoadResult> = { requests: 0, rps: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0, statuses: {}, seconds: 0.5, timeline: [] }

t.test('the latency histogram: 0.1% buckets, reported high but never above the max', async (t) => {
  const empty = new LatencyHistogram()
  t.same([empty.percentile(0.5), empty.percentile(0.99), empty.mean(), empty.max, empty.count], [0, 0, 0, 0, 0], 'nothing recorded: zeros, not NaN')

  // Where a latency lands: what the histogram reports for it beside a slower one (rank 1 of 2).
  const reportedFor = (ms: number, slower = 1000): number => {
    const histogram = new LatencyHistogram()
    histogram.record(ms)
    histogram.record(slower)
    return histogram.percentile(0.5)
  }
  t.equal(reportedFor(0), 0.001, 'no time at all: the first bucket, 1 µs')
  t.equal(reportedFor(0.0005), 0.001, 'under a microsecond: the first bucket')
  t.equal(reportedFor(Number.NaN), 0.001, 'not a number: the first bucket, not an index out of range')
  t.equal(reportedFor(-1), 0.001)
  t.ok(reportedFor(0.0011) > 0.001)
  t.equal(reportedFor(180_000, 7_200_000), reportedFor(3_600_000, 7_200_000), 'one last bucket from two minutes up')

  const histogram = new LatencyHistogram()
  for (let ms = 1; ms <= 1000; ms++) histogram.record(ms)
  t.equal(histogram.count, 1000)
  t.equal(histogram.max, 1000)
  t.equal(histogram.mean(), 500.5)
  for (const [fraction, exact] of [[0.5, 500], [0.9, 900], [0.99, 990]] as const) {
    const value = histogram.percentile(fraction)
    t.ok(value >= exact && value <= exact * 1.001, `p${fraction * 100} ${value} within 0.1% above ${exact}`)
  }
  t.equal(histogram.percentile(1), 1000, 'the last one: the max, not its bucket\'s bound')
  t.ok(histogram.percentile(0) >= 1 && histogram.percentile(0) <= 1.001, 'the first one at the least')

  const slow = new LatencyHistogram()
  slow.record(0.0002)
  slow.record(180_000)
  t.equal(slow.percentile(0.5), 0.001, 'a sub-microsecond latency: the first bucket\'s bound, 1 µs')
  t.ok(slow.percentile(0.99) >= 120_000 && slow.percentile(0.99) <= 180_000, 'past two minutes: at least two minutes')

  histogram.reset()
  t.same([histogram.percentile(0.5), histogram.mean(), histogram.max, histogram.count], [0, 0, 0, 0], 'reset: empty again')
  histogram.record(5)
  t.equal(histogram.percentile(0.5), 5, 'one latency: itself (its bucket\'s bound capped by the max)')
})

t.test('the report: the settings, then the result rounded', async (t) => {
  const report = buildReport(apiSettings, result(), DATE)
  t.same(report, {
    date: '2025-03-04T05:06:07.089Z',
    ...apiSettings,
    requests: 1234,
    seconds: 2,
    rps: 617,
    latencyMs: { p50: 1.235, p90: 45.679, p99: 123.457, max: 2345.679, mean: 3.142 },
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    statuses: { 200: 1234 },
    errorCodes: {},
    timeline: [{ second: 1, requests: 600, rps: 599.9, p99: 100.123 }, { second: 2, requests: 634, rps: 633.8, p99: 123.457 }]
  })
  t.same(Object.keys(report).slice(0, 2), ['date', 'url'], 'the date first, then what was loaded')
})

t.test('the table: what was loaded, then the numbers, statuses and codes', async (t) => {
  const text = table(buildReport(apiSettings, result(), DATE))
  t.equal(text, [
    'macgate load: http://127.0.0.1:8080 GET /api/v1/me, 4 connections, 2 of 3 tokens (zipf)',
    '',
    '| requests | seconds | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | errors |',
    '|:---------|--------:|------:|-------:|-------:|-------:|-------:|--------:|-------:|',
    '| 1,234    |     2.0 |   617 |   1.24 |   45.7 |    123 |   2346 |       0 |      0 |',
    '',
    '| status | count |',
    '|:-------|------:|',
    '| 200    | 1,234 |',
    ''
  ].join('\n'), 'ms: two decimals under 10, one under 100, whole above; counts with thousands separators; no codes table without codes')

  const mix = table(buildReport({ ...apiSettings, paths: [{ path: '/hot', weight: 3 }, { path: '/cold', weight: 1 }] }, result(), DATE))
  t.match(mix, /^macgate load: http:\/\/127\.0\.0\.1:8080 GET \/hot×3 \/cold×1, 4 connections/, 'a mix: each path with its weight')
})

t.test('the table of a run of only refusals: statuses and codes, the biggest first', async (t) => {
  const refused = buildReport(apiSettings, result({
    requests: 30, non2xx: 30, errors: 2, statuses: { 401: 12, 503: 18 }, errorCodes: { 96012: 12, 96007: 18 }
  }), DATE)
  const text = table(refused)
  t.match(text, /\| 30 +\| +2\.0 \| +617 \| +1\.24 \| +45\.7 \| +123 \| +2346 \| +30 \| +2 \|/, 'non-2xx and errors counted')
  t.match(text, /\| status \| count \|\n\|:-+\|-+:\|\n\| 503 +\| +18 \|\n\| 401 +\| +12 \|\n/, 'statuses, the biggest first')
  t.match(text, /\| error code \| count \|\n\|:-+\|-+:\|\n\| 96007 +\| +18 \|\n\| 96012 +\| +12 \|\n$/, 'then the error codes')
  for (const block of text.split('\n\n').slice(1)) {
    const widths = new Set(block.split('\n').filter((line) => line !== '').map((line) => line.length))
    t.equal(widths.size, 1, 'every line of a table as wide as the others')
  }
})

t.test('the table of a run that got no answer', async (t) => {
  const text = table(buildReport(apiSettings, result({ ...EMPTY, errors: 4, timeouts: 4 }), DATE))
  t.match(text, /\| 0 +\| +0\.5 \| +0 \| +0\.00 \| +0\.00 \| +0\.00 \| +0\.00 \| +0 \| +4 \|/, 'zeros, and the errors')
  t.match(text, /\| status \| count \|\n\|:-+\|-+:\|\n$/, 'a status table without rows')
  t.notMatch(text, /NaN|Infinity|undefined/)
})

t.test('the table of a token endpoint run: the endpoint and the grant type, no tokens', async (t) => {
  const text = table(buildReport(tokenSettings, result({ requests: 12, statuses: { 200: 10, 400: 2 }, non2xx: 2, errorCodes: { 96008: 2 } }), DATE))
  t.match(text, /^macgate load: http:\/\/127\.0\.0\.1:8080 POST \/oauth2\/token \(refresh_token\), 2 connections\n/)
  t.match(text, /\| error code \| count \|\n\|:-+\|-+:\|\n\| 96008 +\| +2 \|\n$/)
})

t.test('the live line', async (t) => {
  const progress: LoadProgress = { seconds: 3.2, requests: 12345, rps: 4321.6, p50: 0.456, p99: 12.34, errors: 0, non2xx: 0, statuses: { 200: 12345 }, errorCodes: {} }
  t.equal(progressLine(progress), '3s  12,345 req  4,322 req/s  p50 0.46 ms  p99 12.3 ms  non-2xx 0')
  t.equal(progressLine({ ...progress, non2xx: 40, statuses: { 200: 12305, 401: 10, 503: 30 } }),
    '3s  12,345 req  4,322 req/s  p50 0.46 ms  p99 12.3 ms  non-2xx 40 (503: 30, 401: 10)', 'refusals by status, the biggest first, without the 2xx')
  t.equal(progressLine({ ...progress, non2xx: 40, statuses: { 401: 40 }, errorCodes: { 96012: 40 }, errors: 3, p99: 250 }),
    '3s  12,345 req  4,322 req/s  p50 0.46 ms  p99 250 ms  non-2xx 40 (401: 40; codes 96012: 40)  errors 3', 'then by error code, and connection errors')
})

t.test('the chart: throughput over p99, one point a second', async (t) => {
  const svg = chart(buildReport({ ...apiSettings, paths: [{ path: '/a?x=1&y=<2>', weight: 1 }, { path: '/b', weight: 1 }] }, result({
    timeline: [{ second: 1, requests: 10, rps: 10, p99: 2 }, { second: 2, requests: 30, rps: 30, p99: 1500 }, { second: 3, requests: 20, rps: 20, p99: 3 }]
  }), DATE))
  t.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="760" height="\d+"[^]*<\/svg>\n$/)
  t.match(svg, />macgate load: http:\/\/127\.0\.0\.1:8080 GET \/a\?x=1&amp;y=&lt;2&gt; \/b</, 'the paths, escaped')
  t.match(svg, />2025-03-04T05:06Z · 4 connections · 1,234 requests in 2\.0 s · 0 non-2xx</)
  const throughput = svg.slice(svg.indexOf('throughput'), svg.indexOf('p99 latency'))
  const latency = svg.slice(svg.indexOf('p99 latency'))
  const labels = (part: string): string[] => [...part.matchAll(/text-anchor="end" font-size="11">([^<]+)</g)].map((match) => match[1]!)
  t.same(labels(throughput), ['0', '10', '20', '30'], 'a max of 30 over four lines: steps of 10')
  t.same(labels(latency), ['0', '500', '1,000', '1,500'], 'thousands with a separator')
  t.equal((throughput.match(/<polyline points="[^"]+"/g) ?? []).length, 1, 'a line through the samples')
  t.match(svg, /font-size="11">0<\/text>[^]*font-size="11">0\.5<\/text>[^]*font-size="11">3<\/text>\n<text x="740"/, 'the time axis, to the last second')
  t.notMatch(svg, /NaN|Infinity|undefined/)
})

t.test('the chart of a one-second run, of an empty run, of a token endpoint run', async (t) => {
  const one = chart(buildReport(apiSettings, result({ timeline: [{ second: 0.4, requests: 5, rps: 12.5, p99: 0.8 }] }), DATE))
  t.equal((one.match(/<circle /g) ?? []).length, 2, 'one sample: a dot in each panel, since a line needs two')
  t.notMatch(one, /<polyline/)

  const empty = chart(buildReport(apiSettings, result(EMPTY), DATE))
  t.match(empty, /^<svg [^]*throughput, req\/s[^]*p99 latency, ms[^]*<\/svg>\n$/, 'no sample: still a chart, with its axes')
  t.match(empty, /0 requests in 0\.5 s/)
  t.notMatch(empty, /NaN|Infinity|undefined/, 'no division by zero')

  const token = chart(buildReport(tokenSettings, result(), DATE))
  t.match(token, />macgate load: http:\/\/127\.0\.0\.1:8080 POST \/oauth2\/token</)
  t.equal(escapeXml('<a href="x">&</a>'), '&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;')
})

t.test('--out: the report as JSON and the chart as SVG, named by the date', async (t) => {
  const directory = await mkdtemp(join(tmpdir(), 'macgate-load-report-'))
  t.teardown(async () => await rm(directory, { recursive: true, force: true }))
  const report: LoadReport = buildReport(apiSettings, result(), DATE)
  const out = join(directory, 'new', 'nested')
  const written = await writeReport(report, out)
  t.same(written, { json: join(out, 'load-2025-03-04T05-06-07-089Z.json'), svg: join(out, 'load-2025-03-04T05-06-07-089Z.svg') }, 'directories made; no : or . in the names')
  t.same(JSON.parse(await readFile(written.json, 'utf8')), report)
  t.equal(await readFile(written.svg, 'utf8'), chart(report))

  const file = join(directory, 'a-file')
  await writeFile(file, '')
  await t.rejects(writeReport(report, join(file, 'out')), { code: 'ENOTDIR' }, 'a path through a file: the file system\'s error, for the command to word')
})
