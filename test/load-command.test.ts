// `macgate load` as operators run it: a CLI subprocess against a gateway on a real port, with a
// recording upstream behind it. Loads stay tiny (a few hundred requests): this checks what is
// sent and counted, not how fast.
import type { IncomingMessage } from 'node:http'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { cli, cliEnv, type Run } from './helpers/cli.js'
import { addClient, obtainCode, REDIRECT_URI } from './helpers/app.js'
import { buildTestGateway, echoRoutes, liveToken, recordingUpstream, type LiveTokens } from './helpers/gateway.js'
import { runUnderTty } from './helpers/tty.js'
import { loadCommand } from '../gateway/commands/load.js'

// CLI subprocesses, each loading the TypeScript sources: slow on a shared machine.
t.setTimeout(300_000)

interface Report {
  url: string
  mode: string
  requests: number
  non2xx: number
  errors: number
  statuses: Record<string, number>
  errorCodes: Record<string, number>
  tokens?: { count: number, used: number, distribution: string }
  latencyMs: { p50: number, p99: number }
  timeline: Array<{ second: number, requests: number, rps: number, p99: number }>
}

/** The one JSON line of `--json`. */
function reportOf (t: Test, run: Run): Report {
  t.equal(run.code, 0, `exit 0 (stderr: ${run.stderr})`)
  t.match(run.stdout, /^\{[^\n]*\}\n$/, 'exactly one JSON line')
  return JSON.parse(run.stdout) as Report
}

/** The nonce of an Authorization header as the client library spells it. */
const HEADER = /^MAC access_token="[^"]+", nonce="([^"]+)", mac="[^"]+"$/

t.test('macgate load against a gateway', async (t) => {
  const upstream = await recordingUpstream(t)
  // Each live token and code signs a new user in: more than the default ten a minute.
  const { app } = await buildTestGateway(t, { config: { upstream: upstream.url, routes: echoRoutes, signInRateLimit: 100 } })
  const token = await liveToken(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  // Every Authorization header the gateway received, as sent.
  const headers: string[] = []
  app.server.on('request', (request: IncomingMessage) => { headers.push(request.headers.authorization ?? '') })
  const directory = await mkdtemp(join(tmpdir(), 'macgate-load-'))
  t.teardown(async () => await rm(directory, { recursive: true, force: true }))
  const tokenEnv = (live: LiveTokens, macKey = live.macKey): NodeJS.ProcessEnv => cliEnv({ MACGATE_ACCESS_TOKEN: live.accessToken, MACGATE_MAC_KEY: macKey })

  t.test('every request is signed afresh and verified: no nonce twice', async (t) => {
    const [seenBefore, headersBefore] = [upstream.requests.length, headers.length]
    const run = await cli(['load', '--url', url, '--path', '/echo/load?b=2&a=1', '--amount', '300', '--connections', '4', '--json'], tokenEnv(token))
    const report = reportOf(t, run)
    t.equal(run.stderr, '', 'no progress lines in a run shorter than their period')
    t.equal(report.mode, 'api')
    t.equal(report.url, url)
    t.equal(report.requests, 300)
    t.same(report.statuses, { 200: 300 })
    t.same(report.errorCodes, {})
    t.equal(report.non2xx, 0)
    t.equal(report.errors, 0)
    t.same(report.tokens, { count: 1, used: 1, distribution: 'round-robin' })
    t.ok(report.latencyMs.p50 > 0 && report.latencyMs.p99 >= report.latencyMs.p50, 'latency percentiles')
    t.ok(report.timeline.length >= 1 && report.timeline.reduce((sum, sample) => sum + sample.requests, 0) === 300, 'the timeline holds every answer')
    t.notOk(run.stdout.includes(token.macKey) || run.stdout.includes(token.accessToken), 'no credential in the report')

    const seen = upstream.requests.slice(seenBefore)
    t.equal(seen.length, 300, 'the upstream got every request')
    t.ok(seen.every((request) => request.url === '/echo/load?b=2&a=1' && request.headers['x-macgate-user-id'] === token.userId && request.headers.authorization === undefined),
      'each verified (the identity headers), the path and query as given')
    const sent = headers.slice(headersBefore)
    t.equal(sent.length, 300)
    t.ok(sent.every((header) => HEADER.test(header)), 'the client library\'s header spelling')
    const nonces = new Set(sent.map((header) => HEADER.exec(header)?.[1]))
    t.equal(nonces.size, 300, 'a fresh nonce on every request')
  })

  t.test('a wrong mac_key shows up as 96012 counts, in the table', async (t) => {
    const seenBefore = upstream.requests.length
    const run = await cli(['load', '--url', `${url}/echo/wrong`, '--amount', '100', '--connections', '2'], tokenEnv(token, 'not-the-mac-key'))
    t.equal(run.code, 0, run.stderr)
    t.match(run.stdout, /^macgate load: http:\/\/127\.0\.0\.1:\d+ GET \/echo\/wrong, 2 connections, 1 of 1 tokens \(round-robin\)\n/)
    t.match(run.stdout, /\| requests \| seconds \| req\/s \| p50 ms \| p90 ms \| p99 ms \| max ms \| non-2xx \| errors \|/)
    t.match(run.stdout, /\| 401 +\| +100 \|/, 'the status count')
    t.match(run.stdout, /\| error code \| count \|\n\|:-+\|-+:\|\n\| 96012 +\| +100 \|/, 'the error code count')
    t.equal(upstream.requests.length, seenBefore, 'nothing reached the upstream')
  })

  t.test('a credentials file spreads the requests over its tokens; --paths mixes paths; --out writes a report and a chart', async (t) => {
    const population = [token, await liveToken(app), await liveToken(app), await liveToken(app)]
    const jsonLines = join(directory, 'tokens.jsonl')
    await writeFile(jsonLines, population.map((live) => `${JSON.stringify({ access_token: live.accessToken, mac_key: live.macKey, token_type: 'mac' })}\n`).join(''))
    const paths = join(directory, 'paths.txt')
    await writeFile(paths, '# path and weight\n/echo/hot?page=1 3\n\n/echo/cold\n')
    const out = join(directory, 'out')
    const seenBefore = upstream.requests.length
    const run = await cli(['load', '--url', url, '--credentials', jsonLines, '--paths', paths, '--amount', '200', '--connections', '5', '--out', out, '--json'], cliEnv())
    const report = reportOf(t, run)
    t.same(report.statuses, { 200: 200 })
    t.same(report.tokens, { count: 4, used: 4, distribution: 'round-robin' })
    const seen = upstream.requests.slice(seenBefore)
    const byUser = new Map<string, number>()
    for (const request of seen) byUser.set(String(request.headers['x-macgate-user-id']), (byUser.get(String(request.headers['x-macgate-user-id'])) ?? 0) + 1)
    t.same([...byUser.keys()].sort(), population.map((live) => live.userId).sort(), 'every token signed requests')
    t.same([...byUser.values()], [50, 50, 50, 50], 'round robin: 50 each')
    const hot = seen.filter((request) => request.url === '/echo/hot?page=1').length
    t.equal(hot + seen.filter((request) => request.url === '/echo/cold').length, 200, 'only the file\'s paths')
    t.ok(hot > 100 && hot < 200, `about three quarters hot (${hot})`)

    const files = (await readdir(out)).sort()
    t.match(files, [/^load-.*\.json$/, /^load-.*\.svg$/])
    t.same(JSON.parse(await readFile(join(out, files[0]!), 'utf8')), report, 'the file holds the report --json printed')
    const svg = await readFile(join(out, files[1]!), 'utf8')
    t.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[^]*throughput, req\/s[^]*p99 latency, ms[^]*<\/svg>\n$/)
    t.match(run.stderr, /^macgate load: report .*\.json, chart .*\.svg\n$/)

    const csv = join(directory, 'tokens.csv')
    await writeFile(csv, `access_token,mac_key\n${population.map((live) => `${live.accessToken},${live.macKey}`).join('\n')}\n`)
    const zipf = reportOf(t, await cli(['load', '--url', `${url}/echo/zipf`, '--credentials', csv, '--distribution', 'zipf', '--amount', '200', '--connections', '5', '--json'], cliEnv()))
    t.same(zipf.statuses, { 200: 200 }, 'CSV, drawn by Zipf')
    t.equal(zipf.tokens?.distribution, 'zipf')
  })

  t.test('the token endpoint: codes spent one a request, then refused', async (t) => {
    const { clientId, clientSecret } = await addClient(app.macgate.store)
    const codes: string[] = []
    for (let k = 0; k < 12; k++) codes.push((await obtainCode(app, clientId)).code)
    const file = join(directory, 'codes.txt')
    await writeFile(file, `${codes.join('\n')}\n`)
    const args = ['load', '--url', url, '--token-endpoint', file, '--client-id', clientId, '--redirect-uri', REDIRECT_URI, '--connections', '3', '--json']
    const env = cliEnv({ MACGATE_CLIENT_SECRET: clientSecret })
    const first = reportOf(t, await cli(args, env))
    t.equal(first.mode, 'token-endpoint')
    t.equal(first.requests, 12, 'the run ends when the codes are spent')
    t.same(first.statuses, { 200: 12 })
    t.same(first.errorCodes, {})
    const again = reportOf(t, await cli(args, env))
    t.equal(again.non2xx, 12, 'spent codes are refused')
    t.same(Object.values(again.errorCodes), [12], 'and counted by their error code')
  })

  t.test('under a terminal, a live progress line', async (t) => {
    const { code, output } = await runUnderTty('gateway/cli.ts', ['load', '--url', `${url}/echo/tty`, '--duration', '2s', '--rate', '100', '--connections', '2'], tokenEnv(token))
    t.equal(code, 0, 'exit 0')
    t.match(output, /\r\x1b\[2K1s {2}\d+ req {2}\d+ req\/s {2}p50 [\d.]+ ms {2}p99 [\d.]+ ms {2}non-2xx 0/, 'the line, redrawn in place')
    t.match(output, /\| requests \| seconds \|/, 'then the table')
  })

  t.test('bad input: one line and exit 2, before any request', async (t) => {
    const headersBefore = headers.length
    const malformed = join(directory, 'malformed.csv')
    await writeFile(malformed, `${token.accessToken},${token.macKey}\n\nonly-one-field\n`)
    const run = await cli(['load', '--url', url, '--credentials', malformed], cliEnv())
    t.equal(run.code, 2)
    t.equal(run.stdout, '')
    t.match(run.stderr, /^macgate: .*malformed\.csv line 3: expected access_token,mac_key\[,mac_algorithm\] \(CSV\) or a JSON object, found 1 field\n$/, 'the line number, not the line')
    t.notOk(run.stderr.includes(token.macKey), 'no key in the message')

    // The other refusals in this process: the same errors, which cli.ts prints as one line.
    const badJson = join(directory, 'malformed.jsonl')
    await writeFile(badJson, `${JSON.stringify({ access_token: token.accessToken, mac_key: token.macKey })}\n{"access_token":"x"}\n`)
    const env = { MACGATE_ACCESS_TOKEN: token.accessToken, MACGATE_MAC_KEY: token.macKey }
    await t.rejects(loadCommand(['--url', url, '--credentials', badJson], {}), { name: 'OperatorError', message: /malformed\.jsonl line 2: mac_key is missing or not a string$/ })
    await t.rejects(loadCommand(['--url', url.replace('http://', 'http://user:secret@')], env), { name: 'UsageError', message: /^--url must not carry credentials \(user:password@\)/ })
    await t.rejects(loadCommand(['--url', url], {}), { name: 'UsageError', message: /^load needs credentials: MACGATE_ACCESS_TOKEN and MACGATE_MAC_KEY/ })
    await t.rejects(loadCommand(['--url', url], { MACGATE_ACCESS_TOKEN: token.accessToken }), { name: 'UsageError', message: /no mac_key/ })
    await t.rejects(loadCommand(['--url', 'http://127.0.0.1:1/api'], env), { name: 'OperatorError', message: 'cannot reach http://127.0.0.1:1: ECONNREFUSED' })
    await t.rejects(loadCommand(['--url', url, '--duration', '2s', '--amount', '5'], env), { name: 'UsageError', message: 'give --duration or --amount, not both' })
    await t.rejects(loadCommand(['--url', url, '--connections', '0'], env), { name: 'UsageError', message: /^--connections must be a whole number of at least 1/ })
    await t.rejects(loadCommand(['--url', url, '--token-endpoint', badJson], env), { name: 'UsageError', message: '--token-endpoint needs --client-id' })
    t.equal(headers.length, headersBefore, 'nothing was sent')
  })
})
