// `macgate load` against a gateway on a real port, with a recording upstream behind it. As operators
// run it (a CLI subprocess) where only the process shows it: the exit code and what lands on stdout
// and stderr of a run, of a refusal, under a terminal. In process (loadCommand, its output kept)
// for the rest, which is the same code without seconds of TypeScript loading per run. The subtests
// run side by side on one gateway, each on paths of its own. Loads stay tiny (tens of requests):
// this checks what is sent and counted, not how fast.
import type { IncomingMessage } from 'node:http'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { cli, cliEnv, type Run } from '../../helpers/cli.ts'
import { addClient, authorizeAndAllow, obtainCode, REDIRECT_URI } from '../../helpers/app.ts'
import { buildTestGateway, echoRoutes, liveToken, recordingUpstream, type LiveTokens } from '../../helpers/gateway.ts'
import { runUnderTty } from '../../helpers/tty.ts'
import { loadCommand } from '../../../gateway/commands/load.ts'
import { capture } from '../../helpers/capture.ts'
import type { LoadReport } from '../../../gateway/load/report.ts'

// CLI subprocesses, each loading the TypeScript sources: slow on a shared machine.
t.setTimeout(300_000)

/** The one JSON line of `--json`. */
function reportOf (t: Test, run: Run): LoadReport {
  t.equal(run.code, 0, `exit 0 (stderr: ${run.stderr})`)
  t.match(run.stdout, /^\{[^\n]*\}\n$/, 'exactly one JSON line')
  return JSON.parse(run.stdout) as LoadReport
}

/** loadCommand in process to its end: what it wrote. */
async function load (args: string[], env: NodeJS.ProcessEnv): Promise<{ stdout: string, stderr: string }> {
  const streams = capture()
  await loadCommand(args, env, streams)
  return streams.out
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
  // Every request the gateway received, its path and Authorization header as sent.
  const received: Array<{ url: string, authorization: string }> = []
  app.server.on('request', (request: IncomingMessage) => { received.push({ url: request.url ?? '', authorization: request.headers.authorization ?? '' }) })
  const to = (path: string): Array<{ url: string, authorization: string }> => received.filter((request) => request.url === path)
  const directory = await mkdtemp(join(tmpdir(), 'macgate-load-'))
  t.teardown(async () => await rm(directory, { recursive: true, force: true }))
  const tokenEnv = (live: LiveTokens, macKey = live.macKey): NodeJS.ProcessEnv => cliEnv({ MACGATE_ACCESS_TOKEN: live.accessToken, MACGATE_MAC_KEY: macKey })

  // Side by side: the subprocesses' seconds of loading overlap each other and the in-process runs.
  t.jobs = 8

  t.test('every request is signed afresh and verified: no nonce twice', async (t) => {
    const path = '/echo/load?b=2&a=1'
    const run = await cli(['load', '--url', url, '--path', path, '--amount', '100', '--connections', '4', '--json'], tokenEnv(token))
    const report = reportOf(t, run)
    t.match(run.stderr, /^(macgate load: \d+s {2}[^\n]+\n)*$/, 'on stderr at most the plain progress lines of a run longer than their period')
    t.equal(report.mode, 'api')
    t.equal(report.url, url)
    t.equal(report.requests, 100)
    t.same(report.statuses, { 200: 100 })
    t.same(report.errorCodes, {})
    t.equal(report.non2xx, 0)
    t.equal(report.errors, 0)
    t.same(report.tokens, { count: 1, used: 1, distribution: 'round-robin' })
    t.ok(report.latencyMs.p50 > 0 && report.latencyMs.p99 >= report.latencyMs.p50, 'latency percentiles')
    t.ok(report.timeline.length >= 1 && report.timeline.reduce((sum, sample) => sum + sample.requests, 0) === 100, 'the timeline holds every answer')
    t.notOk(run.stdout.includes(token.macKey) || run.stdout.includes(token.accessToken), 'no credential in the report')

    const seen = upstream.requests.filter((request) => request.url === path)
    t.equal(seen.length, 100, 'the upstream got every request')
    t.ok(seen.every((request) => request.headers['x-macgate-user-id'] === token.userId && request.headers.authorization === undefined),
      'each verified (the identity headers), the path and query as given')
    const sent = to(path).map((request) => request.authorization)
    t.equal(sent.length, 100)
    t.ok(sent.every((header) => HEADER.test(header)), 'the client library\'s header spelling')
    const nonces = new Set(sent.map((header) => HEADER.exec(header)?.[1]))
    t.equal(nonces.size, 100, 'a fresh nonce on every request')
  })

  t.test('a wrong mac_key shows up as 96012 counts, in the table', async (t) => {
    const { stdout, stderr } = await load(['--url', `${url}/echo/wrong`, '--amount', '50', '--connections', '2'], { MACGATE_ACCESS_TOKEN: token.accessToken, MACGATE_MAC_KEY: 'not-the-mac-key' })
    t.equal(stderr, '')
    t.match(stdout, /^macgate load: http:\/\/127\.0\.0\.1:\d+ GET \/echo\/wrong, 2 connections, 1 of 1 tokens \(round-robin\)\n/)
    t.match(stdout, /\| requests \| seconds \| req\/s \| p50 ms \| p90 ms \| p99 ms \| max ms \| non-2xx \| errors \|/)
    t.match(stdout, /\| 401 +\| +50 \|/, 'the status count')
    t.match(stdout, /\| error code \| count \|\n\|:-+\|-+:\|\n\| 96012 +\| +50 \|/, 'the error code count')
    t.equal(to('/echo/wrong').length, 50, 'every request reached the gateway')
    t.equal(upstream.requests.filter((request) => request.url === '/echo/wrong').length, 0, 'nothing reached the upstream')
  })

  t.test('a credentials file spreads the requests over its tokens; --paths mixes paths; --out writes a report and a chart', async (t) => {
    const population = [token, await liveToken(app), await liveToken(app), await liveToken(app)]
    const jsonLines = join(directory, 'tokens.jsonl')
    await writeFile(jsonLines, population.map((live) => `${JSON.stringify({ access_token: live.accessToken, mac_key: live.macKey, token_type: 'mac' })}\n`).join(''))
    const paths = join(directory, 'paths.txt')
    await writeFile(paths, '# path and weight\n/echo/hot?page=1 3\n\n/echo/cold\n')
    const csv = join(directory, 'tokens.csv')
    await writeFile(csv, `access_token,mac_key\n${population.map((live) => `${live.accessToken},${live.macKey}`).join('\n')}\n`)
    const out = join(directory, 'out')
    const [run, zipfRun] = await Promise.all([
      load(['--url', url, '--credentials', jsonLines, '--paths', paths, '--amount', '80', '--connections', '5', '--out', out, '--json'], {}),
      load(['--url', `${url}/echo/zipf`, '--credentials', csv, '--distribution', 'zipf', '--amount', '80', '--connections', '5', '--json'], {})
    ])
    const report = JSON.parse(run.stdout) as LoadReport
    t.same(report.statuses, { 200: 80 })
    t.same(report.tokens, { count: 4, used: 4, distribution: 'round-robin' })
    const seen = upstream.requests.filter((request) => request.url.startsWith('/echo/hot') || request.url.startsWith('/echo/cold'))
    t.equal(seen.length, 80)
    const byUser = new Map<string, number>()
    for (const request of seen) byUser.set(String(request.headers['x-macgate-user-id']), (byUser.get(String(request.headers['x-macgate-user-id'])) ?? 0) + 1)
    t.same([...byUser.keys()].sort(), population.map((live) => live.userId).sort(), 'every token signed requests')
    t.same([...byUser.values()], [20, 20, 20, 20], 'round robin: 20 each')
    const hot = seen.filter((request) => request.url === '/echo/hot?page=1').length
    t.equal(hot + seen.filter((request) => request.url === '/echo/cold').length, 80, 'only the file\'s paths')
    t.ok(hot > 40 && hot < 80, `about three quarters hot (${hot} of 80)`)

    const files = (await readdir(out)).sort()
    t.match(files, [/^load-.*\.json$/, /^load-.*\.svg$/])
    t.same(JSON.parse(await readFile(join(out, files[0]!), 'utf8')), report, 'the file holds the report --json printed')
    const svg = await readFile(join(out, files[1]!), 'utf8')
    t.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[^]*throughput, req\/s[^]*p99 latency, ms[^]*<\/svg>\n$/)
    t.ok(run.stderr.endsWith(`macgate load: report ${join(out, files[0]!)}, chart ${join(out, files[1]!)}\n`), 'the files\' paths on stderr')

    const zipf = JSON.parse(zipfRun.stdout) as LoadReport
    t.same(zipf.statuses, { 200: 80 }, 'CSV, drawn by Zipf')
    t.equal(zipf.tokens?.distribution, 'zipf')
    t.equal(zipf.tokens?.count, 4)
    const zipfUsers = upstream.requests.filter((request) => request.url === '/echo/zipf').map((request) => request.headers['x-macgate-user-id'])
    const first = zipfUsers.filter((user) => user === token.userId).length
    t.ok(first > 80 / 4, `the first token more than its even share (${first} of 80; Zipf: about 38)`)
  })

  t.test('the token endpoint: codes spent one a request, then refused', async (t) => {
    const { clientId, clientSecret } = await addClient(app.macgate.store)
    // One user signed in once, then allowing each code: no password hashing per code.
    const first = await obtainCode(app, clientId)
    const codes = [first.code]
    for (let k = 1; k < 12; k++) {
      const location = await authorizeAndAllow(first.browser, first.user, { client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' })
      codes.push(location.searchParams.get('code')!)
    }
    t.equal(new Set(codes).size, 12, 'twelve codes')
    const file = join(directory, 'codes.txt')
    await writeFile(file, `${codes.join('\n')}\n`)
    const args = ['--url', url, '--token-endpoint', file, '--client-id', clientId, '--redirect-uri', REDIRECT_URI, '--connections', '3', '--json']
    const env = { MACGATE_CLIENT_SECRET: clientSecret }
    const spent = JSON.parse((await load(args, env)).stdout) as LoadReport
    t.equal(spent.mode, 'token-endpoint')
    t.equal(spent.requests, 12, 'the run ends when the codes are spent')
    t.same(spent.statuses, { 200: 12 })
    t.same(spent.errorCodes, {})
    const again = JSON.parse((await load(args, env)).stdout) as LoadReport
    t.equal(again.requests, 12)
    t.equal(again.non2xx, 12, 'spent codes are refused')
    t.same(Object.values(again.errorCodes), [12], 'and counted by their error code')
  })

  t.test('under a terminal, a live progress line', async (t) => {
    const { code, output } = await runUnderTty('gateway/cli.ts', ['load', '--url', `${url}/echo/tty`, '--duration', '2s', '--rate', '100', '--connections', '2'], tokenEnv(token))
    t.equal(code, 0, 'exit 0')
    // eslint-disable-next-line no-control-regex -- the terminal's escape sequence is what is tested
    t.match(output, /\r\x1b\[2K1s {2}\d+ req {2}\d+ req\/s {2}p50 [\d.]+ ms {2}p99 [\d.]+ ms {2}non-2xx 0/, 'the line, redrawn in place')
    t.match(output, /\| requests \| seconds \|/, 'then the table')
  })

  t.test('bad input: one line and exit 2, before any request', async (t) => {
    const target = `${url}/echo/refused`
    const malformed = join(directory, 'malformed.csv')
    await writeFile(malformed, `${token.accessToken},${token.macKey}\n\nonly-one-field\n`)
    const run = await cli(['load', '--url', target, '--credentials', malformed], cliEnv())
    t.equal(run.code, 2)
    t.equal(run.stdout, '')
    t.match(run.stderr, /^macgate: .*malformed\.csv line 3: expected access_token,mac_key\[,mac_algorithm\] \(CSV\) or a JSON object, found 1 field\n$/, 'the line number, not the line')
    t.notOk(run.stderr.includes(token.macKey), 'no key in the message')

    // The other refusals in this process: the same errors, which cli.ts prints as one line.
    const badJson = join(directory, 'malformed.jsonl')
    await writeFile(badJson, `${JSON.stringify({ access_token: token.accessToken, mac_key: token.macKey })}\n{"access_token":"x"}\n`)
    const env = { MACGATE_ACCESS_TOKEN: token.accessToken, MACGATE_MAC_KEY: token.macKey }
    await t.rejects(loadCommand(['--url', target, '--credentials', badJson], {}), { name: 'OperatorError', message: /malformed\.jsonl line 2: mac_key is missing or not a string$/ })
    await t.rejects(loadCommand(['--url', target.replace('http://', 'http://user:secret@')], env), { name: 'UsageError', message: /^--url must not carry credentials \(user:password@\)/ })
    await t.rejects(loadCommand(['--url', target], {}), { name: 'UsageError', message: /^load needs credentials: MACGATE_ACCESS_TOKEN and MACGATE_MAC_KEY/ })
    await t.rejects(loadCommand(['--url', target], { MACGATE_ACCESS_TOKEN: token.accessToken }), { name: 'UsageError', message: /no mac_key/ })
    await t.rejects(loadCommand(['--url', 'http://127.0.0.1:1/api'], env), { name: 'OperatorError', message: 'cannot reach http://127.0.0.1:1: ECONNREFUSED' })
    await t.rejects(loadCommand(['--url', target, '--duration', '2s', '--amount', '5'], env), { name: 'UsageError', message: 'give --duration or --amount, not both' })
    await t.rejects(loadCommand(['--url', target, '--connections', '0'], env), { name: 'UsageError', message: /^--connections must be a whole number of at least 1/ })
    await t.rejects(loadCommand(['--url', target, '--token-endpoint', badJson], env), { name: 'UsageError', message: '--token-endpoint needs --client-id' })
    t.equal(to('/echo/refused').length, 0, 'nothing was sent')
  })
})
