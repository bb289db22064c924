// The rough edges a new user hits (issue #11), through the `macgate` command as operators run it:
// MACGATE_UPSTREAM alone, the help and which errors point to it, passwords on the command line,
// `clients list`, unreachable or malformed Redis addresses, route scopes and enum values in the
// config, and the signed host in the README's recipe.
//
// A subprocess for each kind of outcome (the help, a usage mistake, an operator's mistake found in
// the config and one found on connecting, a start that serves), all started side by side at once:
// each takes seconds to load the TypeScript sources. Every variant of a kind runs in-process
// (helpers/in-process.ts): the same dispatch, and the same stderr and exit code for a failure.
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { usage } from '../../../gateway/commands/usage.ts'
import { ConfigError, parseConfig } from '../../../gateway/config/gateway-config.ts'
import { signingHost } from '../../../plugin/mac/signature.ts'
import { cli, cliEnv, spawnCli, type Run } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { freePort, startRedis } from '../../helpers/redis.ts'
import { ROOT } from '../../helpers/source.ts'

// A few CLI subprocesses side by side on a slow shared machine, each with a hang guard of 120 s.
t.setTimeout(300_000)

const HINT = 'Run `macgate help` for usage.'

/** The environment without any store, upstream or cluster a developer's shell may have set. */
function env (extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cliEnv({ REDIS_CLUSTER_NODES: '', MACGATE_UPSTREAM: '', ...extra })
}

/** Exit 2, nothing on stdout, one `macgate:` line matching `message`, the usage hint only if `hint`. */
function assertRefusal (t: Test, run: Run, message: RegExp, { hint }: { hint: boolean }): void {
  t.equal(run.code, 2, 'exit code 2')
  t.equal(run.stdout, '', 'nothing on stdout')
  const lines = run.stderr.split('\n').filter((line) => line !== '')
  t.equal(lines.length, hint ? 2 : 1, hint ? 'one line and the usage hint' : 'one line, no usage hint')
  t.match(lines[0], message)
  if (hint) t.equal(lines[1], HINT)
  t.notMatch(run.stderr, /\n {4}at /, 'no stack trace')
}

/** Runs the commands in-process side by side (each with its own environment and streams). */
async function inProcess (commands: Array<[string[], NodeJS.ProcessEnv]>): Promise<Run[]> {
  return await Promise.all(commands.map(async ([args, runEnv]) => await runInProcess(args, runEnv)))
}

/** Config files in the test's folder (made once: a second t.testdir would start it afresh). */
function configFiles (t: Test, ...configs: unknown[]): string[] {
  const dir = t.testdir(Object.fromEntries(configs.map((config, index) => [`gateway-${index}.json`, JSON.stringify(config)])))
  return configs.map((_, index) => join(dir, `gateway-${index}.json`))
}

const closed = await freePort()
/** The subprocesses, one per kind of outcome, started together; each test awaits its own. */
const processes = {
  help: cli(['help'], env(), { timeout: 120_000 }),
  usageMistake: cli(['frobnicate'], env(), { timeout: 120_000 }),
  upstreamAlone: cli(['start'], env({ PORT: '0', MACGATE_UPSTREAM: 'http://127.0.0.1:9' }), { timeout: 120_000 }),
  unreachable: cli(['clients', 'list'], env({ REDIS_URL: `redis://user:pa55word@127.0.0.1:${closed}/2` }), { timeout: 120_000 })
}

t.test('MACGATE_UPSTREAM alone: refused with the config to write; with routes from --config it serves', async (t) => {
  // The catch-all route the message and the README show starts the gateway when written on purpose.
  const [file] = configFiles(t, { routes: [{ path: '/*', methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] }] }) as [string]
  const port = await freePort()
  const child = spawnCli(['start', '--config', file], env({ PORT: String(port), MACGATE_UPSTREAM: 'http://127.0.0.1:9' }))
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let output = ''
  child.stdout!.on('data', (chunk) => { output += String(chunk) })
  child.stderr!.on('data', (chunk) => { output += String(chunk) })

  // An operator's mistake found in the config: exit 2, one line, no usage hint.
  const alone = await processes.upstreamAlone
  assertRefusal(t, alone, /^macgate: invalid config: config\.routes must list at least one route with MACGATE_UPSTREAM: /, { hint: false })
  t.match(alone.stderr, 'macgate start --config gateway.json', 'says how to give routes')
  t.match(alone.stderr, '"routes": [{"path": "/api/*", "methods": ["GET", "POST"], "scopes": ["1"]}]', 'shows an example')

  const deadline = Date.now() + 120_000
  while (!output.includes('Server listening at') && child.exitCode === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
  t.match(output, 'Server listening at', 'MACGATE_UPSTREAM with routes from --config starts')
  // Every path is routed, and still needs a MAC token.
  const answer = await fetch(`http://127.0.0.1:${port}/any/path`)
  t.equal(answer.status, 401, 'an unsigned request to any path: 401')
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  await exited
})

t.test('help names start --config FILE; only command-line mistakes point to it', async (t) => {
  const redis = await startRedis(t)
  const store = env({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const [help, unknownCommand] = await Promise.all([processes.help, processes.usageMistake])
  t.equal(help.code, 0)
  t.equal(help.stderr, '')
  t.match(help.stdout, /^ {2}start --config FILE +the gateway config, JSON: "upstream" \(the API to proxy to\), its\n +"routes"/m, 'help explains start --config FILE on a line of its own')
  t.match(help.stdout, /--password-stdin/)
  t.equal(help.stdout, usage, 'the usage text')
  // A mistake in the command line: exit 2, the line and the usage hint.
  assertRefusal(t, unknownCommand, /^macgate: unknown command frobnicate$/, { hint: true })

  // Every other way to ask for help, and the other refusals, in-process.
  for (const args of [[], ['--help'], ['-h']]) {
    const run = await runInProcess(args, env())
    t.same({ code: run.code, stdout: run.stdout, stderr: run.stderr }, { code: 0, stdout: usage, stderr: '' }, `macgate ${args.join(' ')}: the usage text`)
  }
  const [unknownOption, missingArgument, missingValue, noClient, rotateNone, unreachable, badPort] = await inProcess([
    [['clients', 'list', '--colour'], store],
    [['clients', 'add', '--redirect-uri', 'https://a.example/cb'], store],
    [['clients', 'add', '--name'], store],
    [['clients', 'remove', '1234567890123456789'], store],
    [['clients', 'rotate-secret', '1234567890123456789'], store],
    [['clients', 'list'], env({ REDIS_URL: `redis://127.0.0.1:${closed}` })],
    [['start'], env({ PORT: 'eighty' })]
  ]) as [Run, Run, Run, Run, Run, Run, Run]
  assertRefusal(t, unknownOption, /^macgate: Unknown option '--colour' for clients list \(its options: --json\)$/, { hint: true })
  assertRefusal(t, missingArgument, /^macgate: clients add needs --name$/, { hint: true })
  assertRefusal(t, missingValue, /^macgate: clients add: --name needs a value$/, { hint: true })
  assertRefusal(t, noClient, /^macgate: no client 1234567890123456789$/, { hint: false })
  assertRefusal(t, rotateNone, /^macgate: no client 1234567890123456789$/, { hint: false })
  assertRefusal(t, unreachable, /^macgate: cannot reach Redis at REDIS_URL=/, { hint: false })
  assertRefusal(t, badPort, /^macgate: PORT must be a port number, not eighty$/, { hint: false })
})

t.test('users add and passwd: --password says the password comes from stdin', async (t) => {
  const secret = 'hunter2-do-not-echo'
  const cases = [
    ['users', 'add', '--username', 'alice', '--password', secret],
    ['users', 'add', '--username', 'alice', `--password=${secret}`],
    ['users', 'passwd', '--username', 'alice', '--password', secret]
  ]
  // No store is reached: the option is refused first.
  const runs = await inProcess(cases.map((args) => [args, env({ REDIS_URL: `redis://127.0.0.1:${closed}` })]))
  runs.forEach((run, index) => {
    const command = cases[index]!.slice(0, 2).join(' ')
    t.test(cases[index]!.join(' ').replace(secret, 'SECRET'), async (t) => {
      assertRefusal(t, run, new RegExp(`^macgate: Unknown option '--password' for ${command}: ${command} reads the password from standard input with --password-stdin`), { hint: true })
      t.match(run.stderr, `| macgate ${command} --username NAME --password-stdin`, 'shows how')
      t.notMatch(run.stderr, secret, 'the password is not echoed')
    })
  })
})

t.test('clients list: a line for an empty store; PKCE, resource server and mac algorithm in the table', async (t) => {
  const redis = await startRedis(t)
  const store = env({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const [empty, emptyJson] = await inProcess([[['clients', 'list'], store], [['clients', 'list', '--json'], store]]) as [Run, Run]
  t.equal(empty.code, 0)
  t.equal(empty.stdout, 'no clients registered (add one with `macgate clients add`)\n')
  t.equal(emptyJson.stdout, '[]\n', 'JSON stays an empty list')

  const [strict, plain] = await inProcess([
    [['clients', 'add', '--name', 'Strict App', '--redirect-uri', 'https://s.example/cb', '--require-pkce', '--resource-server', '--mac-algorithm', 'HmacSha256', '--json'], store],
    [['clients', 'add', '--name', 'Plain', '--redirect-uri', 'https://p.example/cb', '--scope', '1', '--json'], store]
  ]) as [Run, Run]
  const strictId = (JSON.parse(strict.stdout) as { client_id: string }).client_id
  const plainId = (JSON.parse(plain.stdout) as { client_id: string }).client_id
  const [listed] = await inProcess([[['clients', 'list'], store]]) as [Run]
  t.equal(listed.code, 0)
  const lines = listed.stdout.split('\n').filter((line) => line !== '')
  t.equal(lines.length, 3, 'a header and one line per client')
  const columns = (line: string) => line.split(/ {2,}/)
  t.same(columns(lines[0]!), ['CLIENT_ID', 'NAME', 'SCOPE', 'RESPONSE_TYPES', 'GRANT_TYPES', 'TYPE', 'PKCE', 'RESOURCE_SERVER', 'MAC_ALGORITHM', 'ALLOWED_ORIGINS', 'REDIRECT_URIS'])
  const row = (id: string) => columns(lines.find((line) => line.startsWith(id))!)
  t.same(row(strictId), [strictId, 'Strict App', '1 3', 'code', 'code', 'confidential', 'required', 'yes', 'HmacSha256', '-', 'https://s.example/cb'])
  t.same(row(plainId), [plainId, 'Plain', '1', 'code,token', 'code,implicit', 'confidential', 'optional', 'no', 'HmacSha1', '-', 'https://p.example/cb'])
  // The columns line up: each starts at the same offset on every line.
  for (const title of ['NAME', 'PKCE', 'REDIRECT_URIS']) {
    const at = lines[0]!.indexOf(title)
    t.ok(lines.slice(1).every((line) => line[at - 1] === ' ' && line[at] !== ' '), `the ${title} column is aligned`)
  }
})

/** A TCP listener that counts connections: a store address must not even be tried when malformed. */
async function connectionCounter (t: Test): Promise<{ port: number, count: () => number }> {
  let connections = 0
  const server = createServer((socket) => { connections++; socket.destroy() }).listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  return { port: (server.address() as { port: number }).port, count: () => connections }
}

t.test('Redis unreachable or malformed: the address without its password, and the real cause', async (t) => {
  const counter = await connectionCounter(t)
  const checks = (t: Test, run: Run, message: RegExp): void => {
    assertRefusal(t, run, message, { hint: false })
    t.notMatch(run.stderr, 'pa55word', 'no password')
    t.notMatch(run.stderr, 'Connection is closed', 'the real cause, not ioredis\'s "Connection is closed."')
  }
  const cases: Array<[string, NodeJS.ProcessEnv, RegExp]> = [
    ['closed port', env({ REDIS_URL: `redis://127.0.0.1:${closed}` }), new RegExp(`^macgate: cannot reach Redis at REDIS_URL=redis://127\\.0\\.0\\.1:${closed} \\(connect ECONNREFUSED 127\\.0\\.0\\.1:${closed}\\)$`)],
    ['password removed', env({ REDIS_URL: `redis://user:pa55word@127.0.0.1:${closed}/2` }), new RegExp(`^macgate: cannot reach Redis at REDIS_URL=redis://user@127\\.0\\.0\\.1:${closed}/2 \\(connect ECONNREFUSED`)],
    // Without DNS at all the resolver answers EAI_AGAIN instead.
    ['unresolvable host', env({ REDIS_URL: 'redis://:pa55word@no-such-host.invalid:6379' }), /^macgate: cannot reach Redis at REDIS_URL=redis:\/\/no-such-host\.invalid:6379 \(getaddrinfo (ENOTFOUND|EAI_AGAIN) no-such-host\.invalid\)$/],
    ['http scheme', env({ REDIS_URL: `http://127.0.0.1:${counter.port}` }), new RegExp(`^macgate: REDIS_URL must be redis://\\[user:password@\\]host\\[:port\\]\\[/db\\], rediss://\\.\\.\\. for TLS, or a Unix socket path; http://127\\.0\\.0\\.1:${counter.port} has the scheme http$`)],
    ['garbage', env({ REDIS_URL: 'garbage' }), /^macgate: REDIS_URL must be redis:\/\/.*; garbage is not a URL$/],
    ['no scheme', env({ REDIS_URL: `127.0.0.1:${counter.port}` }), /^macgate: REDIS_URL must be redis:\/\/.*; 127\.0\.0\.1:\d+ is not a URL$/],
    ['unparsable with a password', env({ REDIS_URL: 'redis://:pa55word@[bad' }), /^macgate: REDIS_URL must be redis:\/\/.*; \*\*\*@\[bad is not a URL$/],
    ['cluster: closed ports', env({ REDIS_CLUSTER_NODES: `127.0.0.1:${closed},127.0.0.1:${closed}` }), new RegExp(`^macgate: cannot reach Redis at REDIS_CLUSTER_NODES=127\\.0\\.0\\.1:${closed},127\\.0\\.0\\.1:${closed} \\(127\\.0\\.0\\.1:${closed}: connect ECONNREFUSED 127\\.0\\.0\\.1:${closed}; `)],
    ['cluster: unresolvable', env({ REDIS_CLUSTER_NODES: 'no-such-host.invalid:7000' }), /^macgate: cannot reach Redis at REDIS_CLUSTER_NODES=no-such-host\.invalid:7000 \(.*getaddrinfo (ENOTFOUND|EAI_AGAIN) no-such-host\.invalid\)$/],
    ['cluster: a URL entry', env({ REDIS_CLUSTER_NODES: `127.0.0.1:${counter.port},redis://127.0.0.1:${counter.port}` }), new RegExp(`^macgate: REDIS_CLUSTER_NODES: a cluster node is host:port, not "redis://127\\.0\\.0\\.1:${counter.port}"`)],
    ['cluster: no node', env({ REDIS_CLUSTER_NODES: ' , ' }), /^macgate: REDIS_CLUSTER_NODES must list host:port,host:port,\.\.\.; " , " lists no node$/]
  ]
  const runs = await inProcess(cases.map(([, runEnv]) => [['clients', 'list'], runEnv]))
  // An operator's mistake found on connecting, as the process reports it (and ends by itself).
  const subprocess = await processes.unreachable
  t.test('password removed (the CLI process)', async (t) => {
    t.equal(subprocess.killed, false, 'exited by itself')
    checks(t, subprocess, new RegExp(`^macgate: cannot reach Redis at REDIS_URL=redis://user@127\\.0\\.0\\.1:${closed}/2 \\(connect ECONNREFUSED`))
  })
  cases.forEach(([name, , message], index) => {
    t.test(name, async (t) => checks(t, runs[index]!, message))
  })
  t.equal(counter.count(), 0, 'a malformed address is refused without a connection')
})

t.test('config: route scopes must be in the permission registry; enum errors list the values', async (t) => {
  const refusal = (input: unknown): string => {
    try {
      parseConfig(input)
    } catch (error) {
      if (error instanceof ConfigError) return error.message
      throw error
    }
    return 'accepted'
  }
  const known = '(known: 1, 2, 3, 4, 6, 1000, 2000, 6000, 7000, 11000, 12001, 13002, 16000; config.scopes defines the registry)'
  t.equal(refusal({ routes: [{ path: '/a', scopes: ['1'] }, { path: '/files/*', scopes: ['11000', '999', '5'] }] }),
    `invalid config: config.routes[1] (/files/*) has scope 999, which is not in the permission registry ${known}; config.routes[1] (/files/*) has scope 5, which is not in the permission registry ${known}`)
  t.equal(refusal({ scopes: [{ id: '999', description: 'Ours' }], routes: [{ path: '/a', scopes: ['999'] }] }), 'accepted', 'a scope of the config\'s own registry')
  t.equal(refusal({ scopes: [{ id: '999', description: 'Ours' }], routes: [{ path: '/a', scopes: ['1'] }] }),
    'invalid config: config.routes[0] (/a) has scope 1, which is not in the permission registry (known: 999; config.scopes defines the registry)', 'the config\'s registry replaces the default one')

  // Every enum of the config: its refusal lists the allowed values, never ajv's bare sentence.
  const enums: Array<[unknown, string]> = [
    [{ routes: [{ path: '/a', methods: ['FETCH'] }] }, 'config.routes[0].methods[0] must be one of "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"'],
    [{ routes: [{ path: '/a', match: 'most' }] }, 'config.routes[0].match must be one of "all", "any"'],
    [{ tokenErrorStatus: 400 }, 'config.tokenErrorStatus can only be 200']
  ]
  for (const [input, problem] of enums) {
    const message = refusal(input)
    t.equal(message, `invalid config: ${problem}`)
    t.notMatch(message, 'allowed values')
  }

  // The same through `macgate start --config`: exit 2, one line, no usage hint.
  const [scopeFile, methodFile] = configFiles(t, { routes: [{ path: '/files/*', scopes: ['999'] }] }, { routes: [{ path: '/a', methods: ['get'], match: 'every' }] }) as [string, string]
  const [scope, method] = await inProcess([
    [['start', '--config', scopeFile], env({ PORT: '0' })],
    [['start', '--config', methodFile], env({ PORT: '0' })]
  ]) as [Run, Run]
  assertRefusal(t, scope, /^macgate: invalid config: config\.routes\[0\] \(\/files\/\*\) has scope 999, which is not in the permission registry \(known: 1, 2, 3, /, { hint: false })
  assertRefusal(t, method, /^macgate: invalid config: config\.routes\[0\]\.methods\[0\] must be one of "GET", .*; config\.routes\[0\]\.match must be one of "all", "any"$/, { hint: false })
  t.notMatch(method.stderr, 'allowed values')
})

t.test('README: the signed host is the Host header without its port, lower-cased', async (t) => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  t.match(readme, 'The signed `host` is the Host header without its `:port`, lower-cased (`API.Example.com:8443` signs\n   as `api.example.com`; an IPv6 literal keeps its brackets: `[::1]`)')
  // What the sentence says is what the verifier signs.
  t.equal(signingHost('API.Example.com:8443'), 'api.example.com')
  t.equal(signingHost('[::1]:8080'), '[::1]')
})
