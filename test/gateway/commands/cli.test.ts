// The `macgate` command line as operators run it: a subprocess on the TypeScript sources where the
// process itself is what is shown (output and exit code reaching the shell, stdin, ending by itself,
// serving), the variants in-process (helpers/in-process.ts: the same dispatch, stderr and exit code).
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { cli, cliEnv, spawnCli, type Run } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import t, { type Test } from 'tap'
import { freePort, startRedis } from '../../helpers/redis.ts'

// CLI subprocesses, each loading the TypeScript sources: more than the default file timeout on a
// slow shared machine.
t.setTimeout(300_000)

const PREFIX = '&&&START&&&'

/** An operator mistake: exit 2, one `macgate: ` line (plus the usage hint), no stack trace. */
function assertUsageError (t: Test, run: Run, message: RegExp): void {
  t.equal(run.code, 2, 'exit code 2')
  t.equal(run.stdout, '', 'nothing on stdout')
  const lines = run.stderr.split('\n').filter((line) => line !== '')
  t.equal(lines.filter((line) => line.startsWith('macgate: ')).length, 1, 'one macgate: line')
  t.match(lines[0], message)
  t.same(lines.slice(1).filter((line) => line !== 'Run `macgate help` for usage.'), [], 'nothing else but the usage hint')
  t.notMatch(run.stderr, /\n {4}at /, 'no stack trace')
}

t.test('clients and users against Redis', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })

  // Two processes side by side: a command's output on stdout, and a password read from stdin.
  const [added, alice] = await Promise.all([
    cli(['clients', 'add', '--name', 'N', '--redirect-uri', 'https://a.example/cb', '--json'], env),
    cli(['users', 'add', '--username', 'alice', '--password-stdin', '--json'], env, { input: 'correct horse battery\n' })
  ])
  t.equal(added.code, 0)
  t.equal(added.stderr, '')
  t.match(added.stdout, /^\{[^\n]*\}\n$/, 'exactly one JSON line')
  const first = JSON.parse(added.stdout) as Record<string, unknown>
  t.same(Object.keys(first).sort(), ['client_id', 'client_secret'])
  t.type(first.client_id, 'string')
  t.match(first.client_id, /^[1-9][0-9]{18}$/)
  t.ok(BigInt(first.client_id as string) >= 10n ** 18n && BigInt(first.client_id as string) <= 2n ** 63n - 1n, 'client_id in [10^18, 2^63-1]')
  t.match(first.client_secret, /^[A-Za-z0-9_-]{43}$/)

  const full = await runInProcess(['clients', 'add', '--name', 'Full', '--redirect-uri', 'https://a.example/cb', '--redirect-uri', 'http://127.0.0.1:9/cb',
    '--scope', '1 3', '--response-types', 'code', '--require-pkce', '--json'], env)
  t.equal(full.code, 0)
  const second = JSON.parse(full.stdout) as { client_id: string, client_secret: string }

  const text = await runInProcess(['clients', 'add', '--name', 'Plain', '--redirect-uri', 'https://b.example/cb'], env)
  t.equal(text.code, 0)
  const plain = /^client_id: +([1-9][0-9]{18})\nclient_secret: ([A-Za-z0-9_-]{43})\n\(the secret is shown only now\)\n$/.exec(text.stdout)
  t.ok(plain, `human-readable output: ${text.stdout}`)

  const listed = await runInProcess(['clients', 'list', '--json'], env)
  t.equal(listed.code, 0)
  const clients = JSON.parse(listed.stdout) as Array<Record<string, unknown>>
  t.equal(clients.length, 3)
  const record = clients.find((client) => client.id === second.client_id)!
  t.type(record.createdAt, 'number')
  const { createdAt, ...rest } = record
  t.same(rest, {
    id: second.client_id,
    name: 'Full',
    redirectUris: ['https://a.example/cb', 'http://127.0.0.1:9/cb'],
    scopes: ['1', '3'],
    responseTypes: ['code'],
    grantTypes: ['authorization_code', 'refresh_token'],
    requirePkce: true
  })
  t.same(clients.find((client) => client.id === first.client_id), { id: first.client_id, name: 'N', redirectUris: ['https://a.example/cb'], scopes: ['1', '3'], responseTypes: ['code', 'token'], grantTypes: ['authorization_code', 'refresh_token', 'implicit'], requirePkce: false, createdAt: clients.find((client) => client.id === first.client_id)!.createdAt })
  for (const secret of [first.client_secret as string, second.client_secret, plain?.[2] ?? 'unset']) {
    t.notOk(listed.stdout.includes(secret), 'no secret in the list')
    t.notOk(listed.stdout.includes(createHash('sha256').update(secret).digest('base64url')), 'no secret hash (base64url)')
    t.notOk(listed.stdout.includes(createHash('sha256').update(secret).digest('hex')), 'no secret hash (hex)')
  }
  t.notMatch(listed.stdout, /secret|hash/i, 'no secret-like field')

  const human = await runInProcess(['clients', 'list'], env)
  t.equal(human.code, 0)
  t.equal(human.stdout.split('\n').filter((line) => line !== '').length, 4, 'a header, then one line per client')
  t.match(human.stdout, /^CLIENT_ID +NAME +SCOPE +RESPONSE_TYPES +GRANT_TYPES +TYPE +PKCE +RESOURCE_SERVER +MAC_ALGORITHM +ALLOWED_ORIGINS +REDIRECT_URIS\n/)
  t.match(human.stdout, new RegExp(`\n${second.client_id}  Full +1 3 +code +code +confidential +required +no +HmacSha1 +- +https://a\\.example/cb http://127\\.0\\.0\\.1:9/cb\n`))

  for (const id of clients.map((client) => client.id as string)) {
    const removed = await runInProcess(['clients', 'remove', id], env)
    t.equal(removed.code, 0)
    t.equal(removed.stdout, `removed client ${id} and revoked its tokens\n`)
  }
  const empty = await runInProcess(['clients', 'list', '--json'], env)
  t.equal(empty.stdout, '[]\n')
  t.equal((await runInProcess(['clients', 'list'], env)).stdout, 'no clients registered (add one with `macgate clients add`)\n')

  const unknown = await runInProcess(['clients', 'remove', '1234567890123456789'], env)
  t.not(unknown.code, 0)
  t.match(unknown.stderr, /^macgate: no client 1234567890123456789\n/)
  t.notMatch(unknown.stderr, /\n {4}at /)

  t.equal(alice.code, 0)
  t.match(alice.stdout, /^\{"user_id":"[^"]+"\}\n$/)
  t.equal(alice.stderr, '')
  const again = await runInProcess(['users', 'add', '--username', 'alice', '--password-stdin', '--json'], env, { input: 'another long password\n' })
  t.not(again.code, 0)
  t.equal(again.stdout, '')
  t.match(again.stderr, /^macgate: username alice is taken\n$/)
  const short = await runInProcess(['users', 'add', '--username', 'bob', '--password-stdin'], env, { input: 'short\n' })
  t.not(short.code, 0)
  t.match(short.stderr, /^macgate: password must be 8 to 1024 characters\n$/)
})

t.test('operator mistakes exit 2 with one line', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const add = ['clients', 'add', '--name', 'N']
  const cases: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
    [[...add, '--redirect-uri', 'https://a.example/cb', '--colour'], env, /^macgate: Unknown option '--colour'/],
    [['clients', 'add', '--redirect-uri', 'https://a.example/cb'], env, /^macgate: clients add needs --name$/],
    [[...add, '--redirect-uri', 'http://evil.example/cb'], env, /^macgate: redirect URI http:\/\/evil\.example\/cb http is allowed only for loopback hosts$/],
    [[...add, '--redirect-uri', 'https://a.example/cb', '--scope', '1 999'], env, /^macgate: scope 999 is not in the scope registry$/],
    [['frobnicate'], env, /^macgate: unknown command frobnicate$/],
    [[...add, '--redirect-uri', 'https://a.example/cb'], cliEnv(), /^macgate: .*REDIS_URL/]
  ]
  // A refusal of the plugin's (RegistrationError) through the CLI process; the rest in-process.
  const runs: Run[] = []
  for (const [index, [args, runEnv]] of cases.entries()) runs.push(await (index === 2 ? cli : runInProcess)(args, runEnv))
  t.equal((await runInProcess(['clients', 'list', '--json'], env)).stdout, '[]\n', 'nothing was registered')
  cases.forEach(([args, runEnv, message], index) => {
    t.test(`${args.join(' ')}${runEnv === env ? '' : ' (no REDIS_URL)'}`, async (t) => assertUsageError(t, runs[index]!, message))
  })
})

t.test('Redis unreachable: a clear error, promptly', async (t) => {
  const env = cliEnv({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` })
  const run = await cli(['clients', 'list'], env, { timeout: 10_000 })
  t.match(run.stderr, /^macgate: cannot reach Redis at REDIS_URL/)
  t.notMatch(run.stderr, /\n {4}at /, 'no stack trace')
  // The process must end by itself, not hang on a reconnecting client (killed here after 10 s).
  t.notOk(run.killed, 'the CLI exits by itself within 10 s when Redis is unreachable')
  t.not(run.code, 0, 'non-zero exit')
})

/** A running `macgate start`, its output kept. */
async function startServer (t: Test, env: NodeJS.ProcessEnv, ready: (stdout: string) => boolean) {
  const child = spawnCli(['start'], env)
  const out = { stdout: '', stderr: '' }
  child.stdout!.on('data', (chunk) => { out.stdout += String(chunk) })
  child.stderr!.on('data', (chunk) => { out.stderr += String(chunk) })
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const deadline = Date.now() + 20_000
  while (!ready(out.stdout)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`start did not get ready:\n${out.stdout}\n${out.stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  /** SIGTERM; resolves to the exit code and the time taken. */
  const stop = async () => {
    const started = Date.now()
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
    const [code, signal] = await exited
    clearTimeout(timer)
    return { code, signal, ms: Date.now() - started }
  }
  return { out, stop }
}

/** The authorization code flow over HTTP, as a browser and the client's back end would run it. */
async function codeFlow (t: Test, origin: string, client: { id: string, secret: string, redirectUri: string }, user: { username: string, password: string }) {
  const cookies = new Map<string, string>()
  const request = async (path: string, form?: Record<string, string>) => {
    const response = await fetch(new URL(path, origin), {
      method: form === undefined ? 'GET' : 'POST',
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; '), ...(form !== undefined && { 'content-type': 'application/x-www-form-urlencoded' }) },
      ...(form !== undefined && { body: new URLSearchParams(form).toString() })
    })
    for (const line of response.headers.getSetCookie()) {
      const pair = line.split(';')[0]!
      cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1))
    }
    return { status: response.status, location: response.headers.get('location'), body: await response.text() }
  }
  const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? ''
  const authorize = `/oauth2/authorize?${new URLSearchParams({ client_id: client.id, response_type: 'code', redirect_uri: client.redirectUri, state: 'st8' })}`

  const first = await request(authorize)
  t.equal(first.status, 302)
  t.equal(first.location, `/oauth2/signin?${new URLSearchParams({ return_to: authorize })}`)
  const signIn = await request(first.location!)
  t.equal(signIn.status, 200)
  const signedIn = await request('/oauth2/signin', { username: user.username, password: user.password, _csrf: csrfOf(signIn.body), return_to: authorize })
  t.equal(signedIn.status, 303)
  t.equal(signedIn.location, authorize)
  const confirm = await request(authorize)
  t.equal(confirm.status, 200)
  t.match(confirm.body, `Signed in as <strong id="account">${user.username}</strong>`)
  const decided = await request(authorize, { decision: 'allow', _csrf: csrfOf(confirm.body) })
  t.equal(decided.status, 303)
  const callback = new URL(decided.location!)
  t.equal(`${callback.origin}${callback.pathname}`, client.redirectUri)
  t.equal(callback.searchParams.get('state'), 'st8')
  const code = callback.searchParams.get('code')!
  t.match(code, /^[A-Za-z0-9_.-]{22,}$/)

  const tokenUrl = `/oauth2/token?${new URLSearchParams({ client_id: client.id, client_secret: client.secret, redirect_uri: client.redirectUri, grant_type: 'authorization_code', code })}`
  const token = await fetch(new URL(tokenUrl, origin))
  const raw = await token.text()
  t.equal(token.status, 200)
  t.ok(raw.startsWith(`${PREFIX}{`), 'the token answer is prefixed')
  const body = JSON.parse(raw.slice(PREFIX.length)) as Record<string, unknown>
  t.same(Object.keys(body), ['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type', 'mac_key', 'mac_algorithm', 'openId'])
  t.equal(body.token_type, 'mac')
  t.equal(body.expires_in, 7_776_000)
  return { code, body }
}

/** None of the flow's secrets in the server's log lines. */
function assertQuietLogs (t: Test, logs: string, secrets: Record<string, string>): void {
  for (const [name, value] of Object.entries(secrets)) t.notOk(logs.includes(value), `the logs do not contain the ${name}`)
}

t.test('start without REDIS_URL: the embedded store and its demo', async (t) => {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  // The banner's fields, in whatever order and layout it prints them.
  const field = (stdout: string, name: string) => new RegExp(`(?:^|\\s)${name}=([^\\s&]+)\\s`).exec(stdout)?.[1]
  const bannerDone = (stdout: string) => ['client_id', 'client_secret', 'username', 'password', 'redirect_uri'].every((name) => field(stdout, name) !== undefined)
  const { out, stop } = await startServer(t, cliEnv({ PORT: String(port) }), bannerDone)
  const [id, secret, username, password, redirectUri] = ['client_id', 'client_secret', 'username', 'password', 'redirect_uri'].map((name) => field(out.stdout, name) ?? '') as [string, string, string, string, string]
  t.match(id, /^[1-9][0-9]{18}$/, 'the demo client_id is printed')
  t.match(secret, /^[A-Za-z0-9_-]{43}$/, 'the demo client_secret is printed')
  t.equal(username, 'demo', 'the demo username is printed')
  t.match(password, /^\S{8,}$/, 'the demo password is printed')
  t.equal(redirectUri, `${origin}/demo/callback`)

  const { code, body } = await codeFlow(t, origin, { id, secret, redirectUri }, { username, password })
  t.equal(body.scope, '1 3 4 6', 'the demo client\'s default scopes')
  const stopped = await stop()
  t.equal(stopped.code, 0, 'SIGTERM: exit 0')
  t.ok(stopped.ms < 5_000, `stopped within 5 s (${stopped.ms} ms)`)

  // The banner shows the secret and the password once; the log lines never do.
  t.equal(out.stdout.split(secret).length - 1, 1, 'the client_secret appears only in the banner')
  t.equal(out.stdout.split(password).length - 1, 1, 'the password appears only in the banner')
  const logs = out.stdout.split('\n').filter((line) => line.startsWith('{')).join('\n') + out.stderr
  t.match(logs, /"msg":"Server listening at/, 'the server logged')
  t.match(logs, /"pagePromotion":"off","allocationSitePretenuring":"off"/, 'the serving process\'s V8 tuning is said')
  assertQuietLogs(t, logs, { client_secret: secret, password, code, access_token: body.access_token as string, refresh_token: body.refresh_token as string, mac_key: body.mac_key as string })
})

t.test('start with REDIS_URL: the shared store, clients from the CLI', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const added = JSON.parse((await runInProcess(['clients', 'add', '--name', 'Shop', '--redirect-uri', 'https://shop.example/cb', '--scope', '1 3', '--json'], env)).stdout) as { client_id: string, client_secret: string }
  const password = 'a long enough password'
  t.equal((await runInProcess(['users', 'add', '--username', 'carol', '--password-stdin'], env, { input: `${password}\n` })).code, 0)

  const port = await freePort()
  const { out, stop } = await startServer(t, { ...env, PORT: String(port) }, (stdout) => stdout.includes('Server listening at'))
  const { code, body } = await codeFlow(t, `http://127.0.0.1:${port}`, { id: added.client_id, secret: added.client_secret, redirectUri: 'https://shop.example/cb' }, { username: 'carol', password })
  t.equal(body.scope, '1 3')
  const stopped = await stop()
  t.equal(stopped.code, 0, 'SIGTERM: exit 0')
  t.ok(stopped.ms < 5_000, `stopped within 5 s (${stopped.ms} ms)`)
  t.notMatch(out.stdout, /demo/, 'no demo with a shared store')
  assertQuietLogs(t, out.stdout + out.stderr, { client_secret: added.client_secret, password, code, access_token: body.access_token as string, refresh_token: body.refresh_token as string, mac_key: body.mac_key as string })
})
