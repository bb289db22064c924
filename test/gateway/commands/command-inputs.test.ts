// What the `macgate` commands make of their inputs, in-process: the environment variables (store,
// admin listener, workers, PORT), every kind of command-line mistake, and the commands' outputs.
// The CLI process itself (exit codes, stderr reaching the shell) is shown once per kind of outcome
// in rough-edges.test.ts and cli.test.ts; here each variant is a function call, in milliseconds.
import { once } from 'node:events'
import { createServer } from 'node:net'
import { availableParallelism } from 'node:os'
import pino from 'pino'
import { Registry } from 'prom-client'
import t, { type Test } from 'tap'
import { adminAddress, metricsOf, startAdminListener } from '../../../gateway/commands/start-admin-listener.ts'
import { failure } from '../../../gateway/commands/main.ts'
import { OperatorError, parseCommand, UsageError } from '../../../gateway/commands/usage.ts'
import { workerCount } from '../../../gateway/commands/workers.ts'
import { checkRedisUrl, clusterNodesOf, openStore, redactRedisUrl, sharedStoreName, unreachableMessage } from '../../../gateway/assembly/stores.ts'
import { AuditEvents, MemoryStore, RegistrationError, ScopeRegistry } from '../../../plugin/index.ts'
import { cliEnv, type Run } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { freePort, startRedis } from '../../helpers/redis.ts'
import { nonceUse } from '../../helpers/store-suite.ts'

const HINT = 'Run `macgate help` for usage.\n'

/** The environment without any store, upstream or cluster a developer's shell may have set. */
function env (extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cliEnv({ REDIS_CLUSTER_NODES: '', MACGATE_UPSTREAM: '', ...extra })
}

/** What `fn` throws (it must throw). */
function thrown (fn: () => unknown): Error {
  try {
    fn()
  } catch (error) {
    return error as Error
  }
  throw new Error('did not throw')
}

/** A refusal as the CLI prints it: exit 2, `macgate: MESSAGE`, and the usage hint only for a usage mistake. */
function refused (t: Test, run: Run, message: string, { hint }: { hint: boolean }): void {
  t.same({ code: run.code, stdout: run.stdout, stderr: run.stderr }, { code: 2, stdout: '', stderr: `macgate: ${message}\n${hint ? HINT : ''}` }, message)
}

t.test('stores: MACGATE_MAX_NONCES, REDIS_URL and REDIS_CLUSTER_NODES as given', async (t) => {
  t.test('MACGATE_MAX_NONCES bounds the embedded store\'s replay memory', async (t) => {
    const store = await openStore({ MACGATE_MAX_NONCES: '2' })
    t.teardown(async () => await store.close())
    t.equal(store.kind, 'memory')
    t.equal(store.useNonce(nonceUse('a'.repeat(16), 'n1')), true)
    t.equal(store.useNonce(nonceUse('a'.repeat(16), 'n2')), true)
    t.throws(() => store.useNonce(nonceUse('a'.repeat(16), 'n3')), /nonce store is full/, 'a third pair is refused, not remembered past the bound')
    for (const value of ['0', '-3', '1.5', 'many', '', '9007199254740993']) {
      await t.rejects(openStore({ MACGATE_MAX_NONCES: value }), new RangeError(`MACGATE_MAX_NONCES must be a whole number of at least 1, not ${value}`), `MACGATE_MAX_NONCES=${value}`)
    }
    const unbounded = await openStore({})
    t.ok(unbounded instanceof MemoryStore, 'without it, the default bound')
    await unbounded.close()
  })

  t.test('which shared store: REDIS_CLUSTER_NODES before REDIS_URL; empty values are unset', async (t) => {
    t.equal(sharedStoreName({ REDIS_CLUSTER_NODES: 'h:7000', REDIS_URL: 'redis://h' }), 'REDIS_CLUSTER_NODES')
    t.equal(sharedStoreName({ REDIS_CLUSTER_NODES: '', REDIS_URL: 'redis://h' }), 'REDIS_URL')
    t.equal(sharedStoreName({ REDIS_CLUSTER_NODES: '', REDIS_URL: '' }), undefined)
    t.equal(sharedStoreName({}), undefined)
  })

  t.test('REDIS_URL: accepted forms, and each malformed one named without its password', async (t) => {
    for (const value of ['redis://127.0.0.1', 'redis://u:p@h:6379/0', 'rediss://h:6380/15', 'redis://h:6379/', '/run/redis/redis.sock']) {
      t.equal(checkRedisUrl(value), value, `${value} is accepted as is`)
    }
    const form = 'REDIS_URL must be redis://[user:password@]host[:port][/db], rediss://... for TLS, or a Unix socket path'
    const refusals: Array<[string, string]> = [
      ['//h:6379', `${form}; //h:6379 is not a URL`],
      ['redis:///0', `${form}; redis:///0 names no host`],
      ['redis://:secret@h:6379/cache', `${form}; the path of redis://h:6379/cache must be a database number`],
      ['tcp://h:6379?password=secret', `${form}; tcp://h:6379?password=*** has the scheme tcp`]
    ]
    for (const [value, message] of refusals) {
      const error = thrown(() => checkRedisUrl(value))
      t.same([error.constructor, error.message], [RangeError, message], value.replace('secret', 'SECRET'))
      t.notMatch(error.message, 'secret', 'no password')
    }
    t.equal(redactRedisUrl('redis://u@h:6379'), 'redis://u@h:6379', 'nothing to hide: unchanged')
    t.equal(redactRedisUrl('redis://h:6379/?password=secret&db=1'), 'redis://h:6379/?password=***&db=1', 'a password parameter is masked')
    t.equal(redactRedisUrl('no url at all'), 'no url at all')
  })

  t.test('REDIS_CLUSTER_NODES: host:port entries, IPv6 in brackets, spaces and empty entries ignored', async (t) => {
    t.same(clusterNodesOf(' 10.0.0.1:7000, ,[::1]:7001,redis-a.internal:65535 '), ['10.0.0.1:7000', '[::1]:7001', 'redis-a.internal:65535'])
    for (const node of ['h:0', 'h:65536', 'h', '::1:7000', '-h:7000', 'h:7000x']) {
      t.equal(thrown(() => clusterNodesOf(`a:1,${node}`)).message, `REDIS_CLUSTER_NODES: a cluster node is host:port, not ${JSON.stringify(node)} (the list is host:port,host:port,... without a scheme)`, node)
    }
  })

  t.test('why a store cannot be reached: the cause, its code, the address without its password', async (t) => {
    const url = { REDIS_URL: 'redis://u:secret@127.0.0.1:1/0' }
    const refusedHere = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })
    t.equal(await unreachableMessage({ cause: refusedHere }, url), 'cannot reach Redis at REDIS_URL=redis://u@127.0.0.1:1/0 (connect ECONNREFUSED 127.0.0.1:1)', 'the code already in the text is not repeated')
    t.equal(await unreachableMessage(Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' }), url),
      'cannot reach Redis at REDIS_URL=redis://u@127.0.0.1:1/0 (certificate has expired (CERT_HAS_EXPIRED))', 'a code the text lacks is added')
    t.equal(await unreachableMessage({ cause: 'timed out' }, url), 'cannot reach Redis at REDIS_URL=redis://u@127.0.0.1:1/0 (timed out)', 'a cause that is no Error')
    const cluster = { REDIS_CLUSTER_NODES: '127.0.0.1:1' }
    const lastNode = Object.assign(new Error('None of startup nodes is available'), { lastNodeError: new Error('WRONGPASS invalid username-password pair') })
    t.equal(await unreachableMessage(lastNode, cluster), 'cannot reach Redis at REDIS_CLUSTER_NODES=127.0.0.1:1 (WRONGPASS invalid username-password pair)', 'a cluster\'s last node error, when it says something')

    // "Connection is closed." says nothing: a TCP connection says whether anything listens there.
    const closed = await freePort()
    const untold = new Error('Connection is closed.')
    t.equal(await unreachableMessage(untold, { REDIS_URL: `redis://127.0.0.1:${closed}` }), `cannot reach Redis at REDIS_URL=redis://127.0.0.1:${closed} (127.0.0.1:${closed}: connect ECONNREFUSED 127.0.0.1:${closed})`)
    const listener = createServer((socket) => socket.destroy()).listen(0, '127.0.0.1')
    await once(listener, 'listening')
    t.teardown(() => listener.close())
    const open = (listener.address() as { port: number }).port
    t.equal(await unreachableMessage(untold, { REDIS_URL: `redis://127.0.0.1:${open}` }), `cannot reach Redis at REDIS_URL=redis://127.0.0.1:${open} (Connection is closed.)`, 'something listens: ioredis\'s own words stay')
    t.equal(await unreachableMessage(untold, { REDIS_CLUSTER_NODES: `[::1]:${closed}` }), `cannot reach Redis at REDIS_CLUSTER_NODES=[::1]:${closed} ([::1]:${closed}: connect ECONNREFUSED ::1:${closed})`, 'an IPv6 seed')
    t.equal(await unreachableMessage(untold, { REDIS_URL: 'not a url' }), 'cannot reach Redis at REDIS_URL=not a url (Connection is closed.)', 'no address to try')
    t.equal(await unreachableMessage(untold, {}), 'cannot reach Redis at REDIS_URL= (Connection is closed.)', 'nothing named at all')
    // Port 6379 when the URL names none: nothing of the test listens there.
    t.match(await unreachableMessage(untold, { REDIS_URL: 'redis://127.0.0.1' }), /^cannot reach Redis at REDIS_URL=redis:\/\/127\.0\.0\.1 \((127\.0\.0\.1:6379: connect ECONNREFUSED 127\.0\.0\.1:6379|Connection is closed\.)\)$/)
  })
})

t.test('admin listener: ADMIN_PORT, ADMIN_HOST and MACGATE_ADMIN_TOKEN', async (t) => {
  t.same(adminAddress({}), { port: 8081, host: '127.0.0.1' }, 'the default: 8081 on 127.0.0.1, no token')
  t.equal(adminAddress({ ADMIN_PORT: 'off' }), undefined, 'off: no admin listener')
  t.equal(adminAddress({ ADMIN_PORT: 'off', ADMIN_HOST: '0.0.0.0' }), undefined, 'off wins over an unsafe host: nothing listens')
  for (const value of ['', 'none', '-1', '65536', '80.5', 'OFF']) {
    const error = thrown(() => adminAddress({ ADMIN_PORT: value }))
    t.ok(error instanceof OperatorError, `ADMIN_PORT=${value}: an operator's mistake`)
    t.equal(error.message, `ADMIN_PORT must be a port number or off, not ${value}`)
  }
  t.same(adminAddress({ ADMIN_PORT: '0', ADMIN_HOST: '::1' }), { port: 0, host: '::1' }, 'IPv6 loopback without a token')
  t.same(adminAddress({ ADMIN_HOST: 'localhost' }), { port: 8081, host: 'localhost' })
  t.same(adminAddress({ ADMIN_HOST: '127.8.9.10' }), { port: 8081, host: '127.8.9.10' }, 'all of 127.0.0.0/8 is loopback')
  const unsafe = 'is not a loopback address: set MACGATE_ADMIN_TOKEN to require a bearer token there, or keep the admin listener on 127.0.0.1'
  for (const host of ['0.0.0.0', '::', '10.0.0.5', 'admin.example']) {
    t.equal(thrown(() => adminAddress({ ADMIN_HOST: host })).message, `ADMIN_HOST ${host} ${unsafe}`, `${host} without a token`)
  }
  t.equal(thrown(() => adminAddress({ ADMIN_HOST: '0.0.0.0', MACGATE_ADMIN_TOKEN: '' })).message, `ADMIN_HOST 0.0.0.0 ${unsafe}`, 'an empty token is no token')
  t.same(adminAddress({ ADMIN_HOST: '::', MACGATE_ADMIN_TOKEN: 't0ken' }), { port: 8081, host: '::', token: 't0ken' }, 'with a token, any host')

  t.test('on IPv6 the announced address has brackets; a busy port is named', async (t) => {
    const lines: string[] = []
    const log = pino({ level: 'info' }, { write: (line: string) => { lines.push(line) } })
    const store = new MemoryStore()
    t.teardown(async () => await store.close())
    const options = { metrics: metricsOf(new Registry()), store, api: { registry: new ScopeRegistry(), events: new AuditEvents() }, log }
    const admin = await startAdminListener({ port: 0, host: '::1' }, options)
    t.teardown(async () => await admin.close())
    const { port } = admin.server.address() as { port: number }
    t.match(JSON.parse(lines.at(-1)!), { msg: 'admin listener', admin: `http://[::1]:${port}`, token: false })
    t.equal((await fetch(`http://[::1]:${port}/health/live`)).status, 200, 'it answers there')
    const busy = await startAdminListener({ port, host: '::1', token: 'x' }, options).then(() => undefined, (error: Error) => error)
    t.ok(busy instanceof OperatorError)
    t.equal(busy?.message, `cannot listen on ::1:${port} (ADMIN_PORT): EADDRINUSE`)
  })
})

t.test('--workers and MACGATE_WORKERS', async (t) => {
  t.equal(workerCount(undefined), 1)
  t.equal(workerCount(''), 1)
  t.equal(workerCount('auto'), availableParallelism())
  t.equal(workerCount('1'), 1)
  t.equal(workerCount('256'), 256)
  for (const value of ['0', '257', '1.5', 'two', 'AUTO', '-2']) {
    const error = thrown(() => workerCount(value))
    t.ok(error instanceof UsageError, `${value}: a usage mistake`)
    t.equal(error.message, `--workers must be a whole number from 1 to 256, or auto, not ${value}`)
    const fromEnv = thrown(() => workerCount(value, 'MACGATE_WORKERS'))
    t.ok(fromEnv instanceof OperatorError, `MACGATE_WORKERS=${value}: the operator's setting, not a usage mistake`)
    t.equal(fromEnv.message, `MACGATE_WORKERS must be a whole number from 1 to 256, or auto, not ${value}`)
  }
})

t.test('command-line mistakes: each names the command, the option and what to do', async (t) => {
  const mistake = (args: string[], options: Record<string, { type: 'string' | 'boolean' }>, allowPositionals = false): string =>
    thrown(() => parseCommand('demo', { args, options, allowPositionals })).message
  t.equal(mistake(['extra'], {}), 'demo takes no argument extra (it takes no options)')
  t.equal(mistake(['extra'], { json: { type: 'boolean' } }), 'demo takes no argument extra (its options: --json)')
  t.equal(mistake(['--json=yes'], { json: { type: 'boolean' } }), 'demo: Option \'--json\' does not take an argument', 'a flag given a value')
  t.equal(mistake(['--name'], { name: { type: 'string' } }), 'demo: --name needs a value')
  t.equal(mistake(['--name', '--json'], { name: { type: 'string' }, json: { type: 'boolean' } }), 'demo: --name needs a value (a value starting with a dash is written --name=-VALUE)', 'an option where the value should be')
  t.equal(mistake(['--grace-seconds', '-1'], { 'grace-seconds': { type: 'string' } }), 'demo: --grace-seconds needs a value (a value starting with a dash is written --grace-seconds=-VALUE)', 'a negative number, which Node reads as an option')
  t.equal(mistake(['-x'], {}), 'Unknown option \'-x\' for demo (it takes no options)')
  // A mistake in the command's own definition is no usage mistake: it is not dressed as one.
  const internal = thrown(() => parseCommand('demo', { args: [], options: { n: { type: 'number' as 'string' } } }))
  t.notOk(internal instanceof UsageError)
  t.equal((internal as NodeJS.ErrnoException).code, 'ERR_INVALID_ARG_TYPE')

  // What the CLI prints and exits with for each kind of failure.
  t.same(failure(new UsageError('users needs add')), { stderr: `macgate: users needs add\n${HINT}`, exitCode: 2 })
  t.same(failure(new OperatorError('no client 1')), { stderr: 'macgate: no client 1\n', exitCode: 2 })
  t.same(failure(new RegistrationError('scope 9 is not in the scope registry')), { stderr: 'macgate: scope 9 is not in the scope registry\n', exitCode: 2 })
  t.same(failure(Object.assign(new TypeError('Unexpected argument'), { code: 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' })), { stderr: `macgate: Unexpected argument\n${HINT}`, exitCode: 2 }, 'Node\'s own parse error, were one to come through')
  t.same(failure(new Error('something broke')), { stderr: 'macgate: something broke\n', exitCode: 1 }, 'anything else: exit 1')
})

t.test('start refuses before it opens anything', async (t) => {
  for (const port of ['eighty', '65536', '-1', '80.5']) {
    refused(t, await runInProcess(['start'], env({ PORT: port })), `PORT must be a port number, not ${port}`, { hint: false })
  }
  refused(t, await runInProcess(['start', '--workers', '0'], env()), '--workers must be a whole number from 1 to 256, or auto, not 0', { hint: true })
  refused(t, await runInProcess(['start'], env({ MACGATE_WORKERS: 'lots' })), 'MACGATE_WORKERS must be a whole number from 1 to 256, or auto, not lots', { hint: false })
  refused(t, await runInProcess(['start', '--workers', '2'], env()), '--workers needs REDIS_URL or REDIS_CLUSTER_NODES: each worker is a process of its own, and the embedded store lives inside one process', { hint: false })
  refused(t, await runInProcess(['start'], env({ ADMIN_PORT: 'admin' })), 'ADMIN_PORT must be a port number or off, not admin', { hint: false })
  refused(t, await runInProcess(['start', 'now'], env()), 'start takes no argument now (its options: --config, --workers, --tls-cert, --tls-key)', { hint: true })
  const unreadable = await runInProcess(['start', '--config', '/nonexistent/gateway.json'], env())
  refused(t, unreadable, 'cannot read config file /nonexistent/gateway.json: ENOENT: no such file or directory, open \'/nonexistent/gateway.json\'', { hint: false })
})

t.test('users and clients: mistakes refused before the store; the commands\' outputs', async (t) => {
  const redis = await startRedis(t)
  const store = env({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const usageMistakes: Array<[string[], string]> = [
    [['users'], 'users needs add, passwd, update or remove'],
    [['users', 'delete', 'bob'], 'users needs add, passwd, update or remove, not delete'],
    [['users', 'add', '--password-stdin'], 'users add needs --username'],
    [['users', 'add', '--username', 'bob'], 'users add needs --password-stdin (the password on standard input)'],
    [['users', 'passwd', '--password-stdin'], 'users passwd needs --username'],
    [['users', 'passwd', '--username', 'bob'], 'users passwd needs --password-stdin (the password on standard input)'],
    [['users', 'add', '--username', 'bob', '-p', 'x'], 'Unknown option \'-p\' for users add: users add reads the password from standard input with --password-stdin, never from an argument (which `ps` and the shell history would show): printf \'%s\\n\' "$PASSWORD" | macgate users add --username NAME --password-stdin'],
    [['users', 'remove'], 'users remove needs exactly one username'],
    [['users', 'remove', 'bob', '--force'], 'Unknown option \'--force\' for users remove (it takes no options)'],
    [['users', 'remove', 'a', 'b'], 'users remove needs exactly one username'],
    [['clients'], 'clients needs add, list, show, update, remove or rotate-secret'],
    [['clients', 'frob'], 'clients needs add, list, show, update, remove or rotate-secret, not frob'],
    [['clients', 'show'], 'clients show needs exactly one client id'],
    [['clients', 'add', '--name', 'N', '--redirect-uri', 'https://a.example/cb', '--quota-per-minute', 'lots'], '--quota-per-minute must be a whole number of requests (0 blocks), not lots'],
    [['clients', 'add', '--name', 'N'], 'clients add needs --redirect-uri'],
    [['clients', 'add', '--name', 'N', '--redirect-uri', 'https://a.example/cb', '--mac-algorithm', 'HmacMd5'], '--mac-algorithm must be HmacSha1 or HmacSha256, not HmacMd5'],
    [['clients', 'list', '--json=no'], 'clients list: Option \'--json\' does not take an argument'],
    [['clients', 'remove'], 'clients remove needs exactly one client id'],
    [['clients', 'rotate-secret'], 'clients rotate-secret needs exactly one client id'],
    [['clients', 'rotate-secret', '1', '2'], 'clients rotate-secret needs exactly one client id'],
    [['clients', 'rotate-secret', '1', '--grace-seconds=-1'], '--grace-seconds must be whole seconds, 0 or more, not -1'],
    // Without `=`, -1 reads as an option where the value should be.
    [['clients', 'rotate-secret', '1', '--grace-seconds', '-1'], 'clients rotate-secret: --grace-seconds needs a value (a value starting with a dash is written --grace-seconds=-VALUE)'],
    [['clients', 'rotate-secret', '1', '--grace-seconds', 'a day'], '--grace-seconds must be whole seconds, 0 or more, not a day']
  ]
  for (const [args, message] of usageMistakes) refused(t, await runInProcess(args, store), message, { hint: true })
  // Without a shared store the admin commands have nothing to act on.
  const noStore = 'this command needs REDIS_URL or REDIS_CLUSTER_NODES: the embedded store lives only inside `macgate start`, which prints a demo client and user'
  refused(t, await runInProcess(['users', 'remove', 'bob'], env()), noStore, { hint: false })
  // A bad value of the store's environment: the operator's to fix, named.
  refused(t, await runInProcess(['clients', 'list'], env({ REDIS_URL: 'redis://h/x' })), 'REDIS_URL must be redis://[user:password@]host[:port][/db], rediss://... for TLS, or a Unix socket path; the path of redis://h/x must be a database number', { hint: false })

  const added = await runInProcess(['users', 'add', '--username', 'dora', '--password-stdin'], store, { input: 'a long password\r\n' })
  t.match(added, { code: 0, stderr: '' })
  t.match(added.stdout, /^user_id: \S+\n$/, 'the new user\'s id, as text')
  const changed = await runInProcess(['users', 'passwd', '--username', 'dora', '--password-stdin'], store, { input: 'another long password\n' })
  t.same([changed.code, changed.stdout], [0, 'changed the password of dora and ended their sessions\n'])
  refused(t, await runInProcess(['users', 'passwd', '--username', 'nobody', '--password-stdin'], store, { input: 'a long password\n' }), 'no user nobody', { hint: false })

  const client = await runInProcess(['clients', 'add', '--name', 'Text', '--redirect-uri', 'https://t.example/cb', '--response-types', 'code, token'], store)
  t.equal(client.code, 0)
  const [, clientId, secret] = /^client_id: {5}(\d+)\nclient_secret: (\S{43})\n\(the secret is shown only now\)\n$/.exec(client.stdout) ?? []
  t.ok(clientId !== undefined && secret !== undefined, 'client_id and client_secret as text, the secret shown once')
  const listed = JSON.parse((await runInProcess(['clients', 'list', '--json'], store)).stdout) as Array<{ id: string, responseTypes: string[] }>
  t.same(listed.map(({ id, responseTypes }) => ({ id, responseTypes })), [{ id: clientId, responseTypes: ['code', 'token'] }], '--response-types: a comma-separated list, spaces ignored')
  const rotated = await runInProcess(['clients', 'rotate-secret', clientId!], store)
  t.match(rotated.stdout, new RegExp(`^client_id: {5}${clientId}\\nclient_secret: \\S{43}\\n\\(the secret is shown only now; the previous one works for 86400 more seconds\\)\\n$`), 'a day of grace by default')
  t.notMatch(rotated.stdout, secret!, 'a new secret')

  const removed = await runInProcess(['users', 'remove', 'dora'], store)
  t.same([removed.code, removed.stdout], [0, 'removed user dora, ended their sessions and revoked 0 grants\n'])
  refused(t, await runInProcess(['users', 'remove', 'dora'], store), 'no user dora', { hint: false })
})
