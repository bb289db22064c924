// `macgate load`'s command line, in process: every bad value refused with its own message before
// anything is sent, and what the accepted options send, against a small recording server (a
// gateway is load-command.test.ts's business). Runs stay tiny: a handful of requests each.
import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadCommand, progressWriter } from '../../../gateway/commands/load.ts'
import { capture } from '../../helpers/capture.ts'
import type { LoadProgress } from '../../../gateway/load/run.ts'

interface Seen { method: string, url: string, headers: IncomingHttpHeaders, body: string }

// Everything the server got, whatever the run; answers `{"code":0}`, or under /refuse a 200
// carrying an error, as a token endpoint configured with tokenErrorStatus 200 answers.
const seen: Seen[] = []
const server = createServer((request, response) => {
  let body = ''
  request.on('data', (chunk: Buffer) => { body += String(chunk) })
  request.on('end', () => {
    seen.push({ method: request.method!, url: request.url!, headers: request.headers, body })
    response.setHeader('content-type', 'application/json')
    response.end(request.url!.startsWith('/refuse') ? '{"error":96008,"error_description":"spent"}' : '{"code":0}')
  })
})
server.listen(0, '127.0.0.1')
await once(server, 'listening')
const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
t.teardown(() => { server.closeAllConnections(); server.close() })

const directory = await mkdtemp(join(tmpdir(), 'macgate-load-options-'))
t.teardown(async () => await rm(directory, { recursive: true, force: true }))
let files = 0
async function file (text: string): Promise<string> {
  const path = join(directory, `file-${++files}.txt`)
  await writeFile(path, text)
  return path
}

const TOKEN = { MACGATE_ACCESS_TOKEN: 'env-token', MACGATE_MAC_KEY: 'env-key' }

// The subtests run side by side (each run waits for autocannon's 1 s tick): each run loads paths
// of its own, by which the requests it sent are told apart.
t.jobs = 8

/** Runs the command to its end; resolves to its --json report and the requests sent under `prefix`. */
async function run (prefix: string, args: string[], env: NodeJS.ProcessEnv = TOKEN): Promise<{ report: Record<string, any>, sent: Seen[], stderr: string }> {
  const streams = capture()
  await loadCommand([...args, '--json'], env, streams)
  return { report: JSON.parse(streams.out.stdout) as Record<string, any>, sent: seen.filter((request) => request.url.startsWith(prefix)), stderr: streams.out.stderr }
}

/** The MAC of an Authorization header, decoded: 20 bytes for HmacSha1, 32 for HmacSha256. */
function macBytes (authorization = ''): number {
  const mac = /^MAC access_token="[^"]+", nonce="[^"]+", mac="([^"]+)"$/.exec(authorization)?.[1]
  return mac === undefined ? 0 : Buffer.from(decodeURIComponent(mac), 'base64').length
}

/** Nothing reached the path every refused command line names. */
function nothingSent (t: Test): void {
  t.equal(seen.filter((request) => request.url.startsWith('/never')).length, 0, 'nothing was sent')
}

t.test('every bad value: its own message, a UsageError, and nothing sent', async (t) => {
  const url = `${origin}/never`
  const refusals: Array<[string[], NodeJS.ProcessEnv, string | RegExp]> = [
    [[], TOKEN, 'load needs --url, the deployment to load (e.g. --url https://api.example.com)'],
    [['--url', 'api.example.com'], TOKEN, '--url must be an absolute http or https URL, not api.example.com'],
    [['--url', 'ftp://127.0.0.1/'], TOKEN, '--url must be an http or https URL, not ftp:'],
    [['--url', url.replace('http://', 'http://user@')], TOKEN, /^--url must not carry credentials \(user:password@\): give the token with MACGATE_ACCESS_TOKEN/],
    [['--url', url.replace('http://', 'http://:secret@')], TOKEN, /^--url must not carry credentials/],
    [['--url', `${url}#top`], TOKEN, '--url must not have a #fragment'],
    [['--url', url, '--method', 'trace'], TOKEN, '--method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, not TRACE'],
    [['--url', url, '--connections', '0'], TOKEN, '--connections must be a whole number of at least 1, not 0'],
    [['--url', url, '--connections', '1.5'], TOKEN, '--connections must be a whole number of at least 1, not 1.5'],
    [['--url', url, '--connections=-3'], TOKEN, '--connections must be a whole number of at least 1, not -3'],
    [['--url', url, '--amount', '99999999999999999999'], TOKEN, '--amount must be a whole number of at least 1, not 99999999999999999999'],
    [['--url', url, '--rate', 'fast'], TOKEN, '--rate must be a whole number of at least 1, not fast'],
    [['--url', url, '--duration', 'soon'], TOKEN, '--duration must be a time such as 30s, 2m or 500ms, not soon'],
    [['--url', url, '--duration', '0s'], TOKEN, '--duration must be a time such as 30s, 2m or 500ms, not 0s'],
    [['--url', url, '--duration=-5'], TOKEN, '--duration must be a time such as 30s, 2m or 500ms, not -5'],
    [['--url', url, '--duration', '5d'], TOKEN, '--duration must be a time such as 30s, 2m or 500ms, not 5d'],
    [['--url', url, '--duration', '0'], TOKEN, '--duration must be a time such as 30s, 2m or 500ms, not 0'],
    [['--url', url, '--duration', '2m', '--amount', '5'], TOKEN, 'give --duration or --amount, not both'],
    [['--url', url, '--path', 'api/v1'], TOKEN, '--path must start with one /, not api/v1'],
    [['--url', url, '--path', '/ok', '--path', '//elsewhere.example.com/'], TOKEN, '--path must start with one /, not //elsewhere.example.com/'],
    [['--url', url, '--path', '/a b'], TOKEN, '--path must not contain spaces or #, not /a b'],
    [['--url', url, '--distribution', 'uniform'], TOKEN, '--distribution must be round-robin or zipf, not uniform'],
    [['--url', url, '--client-id', 'c1'], TOKEN, '--client-id belongs to --token-endpoint FILE'],
    [['--url', url, '--grant-type', 'refresh_token'], TOKEN, '--grant-type belongs to --token-endpoint FILE'],
    [['--url', url, '--mac-algorithm', 'HmacMd5'], TOKEN, '--mac-algorithm must be HmacSha1 or HmacSha256, not HmacMd5'],
    [['--url', url, '--credentials', 'tokens.csv', '--access-token', 'a'], {}, 'give --credentials FILE or one token (--access-token, --mac-key), not both'],
    [['--url', url, '--credentials', 'tokens.csv', '--mac-key', 'k'], {}, 'give --credentials FILE or one token (--access-token, --mac-key), not both'],
    [['--url', url], {}, /^load needs credentials: MACGATE_ACCESS_TOKEN and MACGATE_MAC_KEY in the environment, --credentials FILE/],
    [['--url', url], { MACGATE_MAC_KEY: 'k' }, 'load has a mac_key but no access token: set MACGATE_ACCESS_TOKEN or --access-token'],
    [['--url', url, '--access-token', ''], TOKEN, 'load has a mac_key but no access token: set MACGATE_ACCESS_TOKEN or --access-token'],
    [['--url', url, '--access-token', 'a'], {}, 'load has an access token but no mac_key: set MACGATE_MAC_KEY or --mac-key'],
    [['--url', url], { ...TOKEN, MACGATE_MAC_KEY: '' }, 'load has an access token but no mac_key: set MACGATE_MAC_KEY or --mac-key'],
    [['--url', url, '--token'], TOKEN, /^Unknown option '--token' for load: give the token with MACGATE_ACCESS_TOKEN and MACGATE_MAC_KEY/],
    [['--url', url, 'extra'], TOKEN, /^load takes no argument extra/]
  ]
  for (const [args, env, message] of refusals) {
    await t.rejects(loadCommand(args, env), { name: 'UsageError', message }, args.join(' '))
  }
  nothingSent(t)
})

t.test('the token endpoint mode\'s own refusals', async (t) => {
  const codes = await file('c1\nc2\n')
  const url = `${origin}/never`
  const base = ['--url', url, '--token-endpoint', codes, '--client-id', 'c1', '--redirect-uri', 'https://app.example.com/cb']
  const secret = { MACGATE_CLIENT_SECRET: 's1' }
  const refusals: Array<[string[], NodeJS.ProcessEnv, string]> = [
    [[...base, '--method', 'put'], secret, '--token-endpoint sends GET or POST, not PUT'],
    ...['--credentials', '--access-token', '--mac-key', '--mac-algorithm', '--distribution', '--paths'].map((name): [string[], NodeJS.ProcessEnv, string] =>
      [[...base, name, 'x'], secret, `${name} does not go with --token-endpoint, which spends codes or refresh tokens`]),
    [[...base, '--duration', '10s'], secret, '--token-endpoint runs until its grants are spent: leave out --duration (--amount N spends only the first N)'],
    [[...base, '--grant-type', 'password'], secret, '--grant-type must be authorization_code or refresh_token, not password'],
    [['--url', url, '--token-endpoint', codes], secret, '--token-endpoint needs --client-id'],
    [base, {}, '--token-endpoint needs the client secret: MACGATE_CLIENT_SECRET in the environment, or --client-secret'],
    [[...base, '--client-secret', ''], {}, '--token-endpoint needs the client secret: MACGATE_CLIENT_SECRET in the environment, or --client-secret'],
    [['--url', url, '--token-endpoint', codes, '--client-id', 'c1'], secret, '--token-endpoint with codes needs --redirect-uri, the one the codes were issued for'],
    [[...base, '--path', '/oauth2/token', '--path', '/token'], secret, '--token-endpoint takes one --path'],
    [[...base, '--amount', '3'], secret, `--amount 3 is more than the 2 grants in ${codes}: each is spent once`]
  ]
  for (const [args, env, message] of refusals) {
    await t.rejects(loadCommand(args, env), { name: 'UsageError', message }, args.slice(4).join(' '))
  }
  nothingSent(t)
})

t.test('a bad file: the file and its line, an OperatorError (no usage hint: the command line was right)', async (t) => {
  const url = `${origin}/never`
  const paths = await file('/ok 2\n/bad 0\n')
  await t.rejects(loadCommand(['--url', url, '--paths', paths], TOKEN), { name: 'OperatorError', message: `${paths} line 2: expected PATH [WEIGHT], the weight a positive number` })
  const credentials = await file('a,k\n{"access_token":"a"}\n')
  await t.rejects(loadCommand(['--url', url, '--credentials', credentials], {}), { name: 'OperatorError', message: `${credentials} line 2: expected access_token,mac_key[,mac_algorithm] (CSV) or a JSON object, found 1 field` })
  const empty = await file('# spent\n')
  await t.rejects(loadCommand(['--url', url, '--token-endpoint', empty, '--client-id', 'c', '--grant-type', 'refresh_token'], { MACGATE_CLIENT_SECRET: 's' }),
    { name: 'OperatorError', message: `the token-endpoint file ${empty} is empty` })
  const missing = join(directory, 'missing.txt')
  await t.rejects(loadCommand(['--url', url, '--paths', missing], TOKEN), { name: 'OperatorError', message: `cannot read the paths file ${missing}: ENOENT` })
  nothingSent(t)
})

t.test('an unreachable target: one line before the run', async (t) => {
  await t.rejects(loadCommand(['--url', 'http://127.0.0.1:1/api'], TOKEN), { name: 'OperatorError', message: 'cannot reach http://127.0.0.1:1: ECONNREFUSED' })
  // A reserved name that never resolves: the default ports without connecting anywhere.
  await t.rejects(loadCommand(['--url', 'http://load-test.invalid/'], TOKEN), { name: 'OperatorError', message: /^cannot reach http:\/\/load-test\.invalid: (ENOTFOUND|EAI_AGAIN)$/ })
  await t.rejects(loadCommand(['--url', 'https://load-test.invalid/'], TOKEN), { name: 'OperatorError', message: /^cannot reach https:\/\/load-test\.invalid: (ENOTFOUND|EAI_AGAIN)$/ })
})

t.test('--amount: exactly that many requests, the URL\'s path and query when no --path', async (t) => {
  const [{ report, sent, stderr }, root] = await Promise.all([
    run('/api/me', ['--url', `${origin}/api/me?x=1`, '--amount', '7', '--connections', '3']),
    run('/', ['--url', origin, '--amount', '1'])
  ])
  t.equal(report.amount, 7)
  t.notOk('duration' in report, 'no duration: the amount ends the run')
  t.equal(report.requests, 7)
  t.same(report.statuses, { 200: 7 })
  t.same(report.paths, [{ path: '/api/me?x=1', weight: 1 }])
  t.equal(sent.length, 7)
  t.ok(sent.every((request) => request.method === 'GET' && request.url === '/api/me?x=1'), 'GET, the path and query of --url')
  t.ok(sent.every((request) => request.headers.authorization?.startsWith('MAC access_token="env-token", ') === true && macBytes(request.headers.authorization) === 20),
    'signed with the environment\'s token, HmacSha1 (20 bytes) by default')
  t.equal(stderr, '', 'nothing on stderr')

  t.same(root.sent.filter((request) => request.url === '/').length, 1, 'a bare origin: /')
})

t.test('--duration: in milliseconds or bare seconds, as the report says', async (t) => {
  const [ms, bare] = await Promise.all([
    run('/api/timed-ms', ['--url', `${origin}/api/timed-ms`, '--duration', '300ms', '--rate', '20', '--connections', '1']),
    run('/api/timed-s', ['--url', `${origin}/api/timed-s`, '--duration', '0.2', '--rate', '20', '--connections', '1'])
  ])
  t.equal(ms.report.duration, 0.3)
  t.equal(ms.report.rate, 20)
  t.notOk('amount' in ms.report)
  t.ok(ms.sent.every((request) => request.method === 'GET'), 'sent as asked')
  t.equal(bare.report.duration, 0.2, 'a bare number is seconds')
})

t.test('flags over the environment; --mac-algorithm; --method; a weighted --path and --paths mix', async (t) => {
  const paths = await file('/mix/b 1\n')
  const { report, sent } = await run('/mix/', ['--url', origin, '--method', 'post', '--path', '/mix/a', '--paths', paths, '--access-token', 'flag-token', '--mac-key', 'flag-key',
    '--mac-algorithm', 'HmacSha256', '--amount', '40', '--connections', '2', '--distribution', 'zipf'])
  t.equal(report.method, 'POST')
  t.same(report.paths, [{ path: '/mix/a', weight: 1 }, { path: '/mix/b', weight: 1 }], '--path first, then the file\'s')
  t.same(report.tokens, { count: 1, used: 1, distribution: 'zipf' })
  t.ok(sent.every((request) => request.method === 'POST'))
  t.equal(sent.length, 40)
  t.ok(sent.every((request) => request.headers.authorization?.startsWith('MAC access_token="flag-token", ') === true && macBytes(request.headers.authorization) === 32),
    'the flags\' token over the environment\'s, HmacSha256 (32 bytes)')
  t.same([...new Set(sent.map((request) => request.url))].sort(), ['/mix/a', '/mix/b'], 'both paths of the mix')
})

t.test('the token endpoint, GET: the grants in the query, after the path\'s own', async (t) => {
  const grants = await file(`r1\n${JSON.stringify({ refresh_token: 'r2', scope: '1 3' })}\nr3\n`)
  const codes = await file('c1\n')
  const [{ report, sent }, plain] = await Promise.all([
    run('/oauth2/token?tenant=7', ['--url', `${origin}/oauth2/token?tenant=7`, '--token-endpoint', grants, '--grant-type', 'refresh_token', '--method', 'GET',
      '--client-id', 'c1', '--client-secret', 'flag-secret', '--amount', '2', '--connections', '1'], { MACGATE_CLIENT_SECRET: 'env-secret' }),
    run('/oauth2/token?grant_type=authorization_code', ['--url', origin, '--token-endpoint', codes, '--method', 'get', '--client-id', 'c2', '--redirect-uri', 'https://app.example.com/cb'],
      { MACGATE_CLIENT_SECRET: 'env-secret' })
  ])
  t.same(plain.sent.map((request) => request.url), ['/oauth2/token?grant_type=authorization_code&client_id=c2&client_secret=env-secret&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb&code=c1'],
    'a bare origin: /oauth2/token, the form its whole query')
  t.same(plain.report.paths, [{ path: '/oauth2/token', weight: 1 }])
  t.equal(report.mode, 'token-endpoint')
  t.equal(report.grantType, 'refresh_token')
  t.equal(report.amount, 2, '--amount: only the first N grants')
  t.notOk('tokens' in report, 'no token population')
  t.same(sent.map((request) => [request.method, request.url, request.headers.authorization]), [
    ['GET', '/oauth2/token?tenant=7&grant_type=refresh_token&client_id=c1&client_secret=flag-secret&refresh_token=r1', undefined],
    ['GET', '/oauth2/token?tenant=7&grant_type=refresh_token&client_id=c1&client_secret=flag-secret&refresh_token=r2&scope=1+3', undefined]
  ], 'one grant a request, in order; no redirect_uri for refresh tokens; the flag\'s secret over the environment\'s')
})

t.test('the token endpoint, POST: the form in the body; errors answered with 200 still counted by code', async (t) => {
  const codes = await file('c1\nc2\nc3\n')
  const { report, sent } = await run('/refuse/token', ['--url', origin, '--token-endpoint', codes, '--path', '/refuse/token', '--client-id', 'c1',
    '--redirect-uri', 'https://app.example.com/cb', '--connections', '2'], { MACGATE_CLIENT_SECRET: 'env-secret' })
  t.equal(report.amount, 3, 'every grant of the file by default')
  t.equal(report.requests, 3)
  t.same(report.statuses, { 200: 3 })
  t.same(report.errorCodes, { 96008: 3 }, 'the error code of every body, 200 or not')
  t.equal(report.method, 'POST')
  t.ok(sent.every((request) => request.method === 'POST' && request.url === '/refuse/token' && request.headers['content-type'] === 'application/x-www-form-urlencoded'))
  t.same(sent.map((request) => Object.fromEntries(new URLSearchParams(request.body))).sort((a, b) => a.code!.localeCompare(b.code!)), ['c1', 'c2', 'c3'].map((code) => ({
    grant_type: 'authorization_code', client_id: 'c1', client_secret: 'env-secret', redirect_uri: 'https://app.example.com/cb', code
  })), 'each code once, with the client and the redirect URI')
})

t.test('--out: a report and a chart, or one line when they cannot be written', async (t) => {
  const out = join(directory, 'reports')
  const blocked = await file('')
  const [streams, failed] = [capture(), capture()]
  await Promise.all([
    loadCommand(['--url', `${origin}/api/out`, '--amount', '2', '--connections', '1', '--out', out], TOKEN, streams),
    t.rejects(loadCommand(['--url', `${origin}/api/out-failed`, '--amount', '1', '--out', join(blocked, 'reports')], TOKEN, failed),
      { name: 'OperatorError', message: `cannot write the report to ${join(blocked, 'reports')}: ENOTDIR` })
  ])
  t.match(streams.out.stderr, /^macgate load: report .*reports\/load-[0-9T-]+Z\.json, chart .*reports\/load-[0-9T-]+Z\.svg\n$/)
  t.match(streams.out.stdout, /^macgate load: http:\/\/127\.0\.0\.1:\d+ GET \/api\/out, 1 connections, 1 of 1 tokens \(round-robin\)\n/, 'and the table')

  t.equal(failed.out.stdout, '', 'no table after the failure')
})

t.test('the live line: redrawn in place on a terminal, a plain line every 5 s otherwise', async (t) => {
  const progress = (seconds: number): LoadProgress => ({ seconds, requests: seconds * 10, rps: 10, p50: 1, p99: 2, errors: 0, non2xx: 0, statuses: { 200: seconds * 10 }, errorCodes: {} })
  const plain = capture()
  const writer = progressWriter(plain.stderr)
  for (let second = 1; second <= 11; second++) writer.update(progress(second + 0.01))
  writer.end()
  t.same(plain.out.stderr.split('\n'), [
    'macgate load: 5s  50 req  10 req/s  p50 1.00 ms  p99 2.00 ms  non-2xx 0',
    'macgate load: 10s  100 req  10 req/s  p50 1.00 ms  p99 2.00 ms  non-2xx 0',
    ''
  ], 'a CI log gets a line at 5 s and 10 s, nothing at the end')

  const tty = capture(true)
  const live = progressWriter(tty.stderr)
  live.update(progress(1))
  live.update(progress(2))
  live.end()
  t.equal(tty.out.stderr, '\r\x1b[2K1s  10 req  10 req/s  p50 1.00 ms  p99 2.00 ms  non-2xx 0\r\x1b[2K2s  20 req  10 req/s  p50 1.00 ms  p99 2.00 ms  non-2xx 0\r\x1b[2K',
    'each second redrawn over the last; cleared at the end, before the report')
})
