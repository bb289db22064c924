// Hardening fixes, through the public surface: PKCE downgrade and PKCE-only clients (RFC 9700
// §2.1.1), redirect URIs presetting response parameters (contract §3), the macQueryVariants switch
// (§6), a preflight never verified, the sample open API kept off TCP, and `macgate start` on a busy
// port. Sessions are in hardening-sessions.test.ts; client authentication throttling in
// client-auth-throttle.test.ts.
import { once } from 'node:events'
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname } from 'node:path'
import t from 'tap'
import { type ClientRecord, RedisStore, registerClient, RegistrationError, ScopeRegistry } from '../../../plugin/index.ts'
import { addClient, addUser, authorizeUrl, buildTestApp, InjectBrowser, obtainCode, REDIRECT_URI, signedInBrowser } from '../../helpers/app.ts'
import { liveToken, openApiError, signedInject } from '../../helpers/gateway.ts'
import { startRedis } from '../../helpers/redis.ts'
import { cli, cliEnv } from '../../helpers/cli.ts'
import { assertTokenError, assertTokenSet, codeParams, rawToken, tokenFrom } from '../../helpers/token-checks.ts'

/** The error code an authorize page shows. */
function pageError (body: string): string | undefined {
  return /<span id="error-code">(\d+)<\/span>/.exec(body)?.[1]
}

// --- PKCE ------------------------------------------------------------------------------------------

t.test('PKCE downgrade: a code_verifier for a code issued without a challenge is refused, the code kept', async (t) => {
  const { app, store } = await buildTestApp(t)
  const client = await addClient(store)
  const { code } = await obtainCode(app, client.clientId)
  const form = new URLSearchParams(codeParams(client, code, { code_verifier: 'v'.repeat(43) })).toString()
  const answers = {
    GET: await rawToken(app, { url: `/oauth2/token?${form}` }),
    POST: await rawToken(app, { method: 'POST', payload: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  }
  for (const [method, answer] of Object.entries(answers)) {
    assertTokenError(t, answer, 96004, 400)
    t.equal(answer.raw, '&&&START&&&{"error":96004,"error_description":"code_verifier sent for a code issued without code_challenge"}', `${method}: exact body`)
  }
  assertTokenSet(t, await tokenFrom(app, codeParams(client, code)), { scope: '1 3 4 6' })
})

t.test('a client requiring PKCE gets the code grant only', async (t) => {
  const { app, store } = await buildTestApp(t)
  const pkce = await addClient(store, { requirePkce: true })
  t.same(pkce.client.responseTypes, ['code'], 'registered with code only')
  await t.rejects(registerClient(store, new ScopeRegistry(), { name: 'X', redirectUris: [REDIRECT_URI], scope: '1', requirePkce: true, responseTypes: ['code', 'token'] }),
    { name: 'RegistrationError', message: /PKCE/ }, 'code and token refused')
  await t.rejects(registerClient(store, new ScopeRegistry(), { name: 'X', redirectUris: [REDIRECT_URI], scope: '1', requirePkce: true, responseTypes: ['token'] }),
    RegistrationError, 'token alone refused')

  // A record that allows the implicit grant anyway (written before the rule, or by hand).
  await store.saveClient({ ...pkce.client, responseTypes: ['code', 'token'] } satisfies ClientRecord)
  const other = await addClient(store)
  const user = await addUser(store)
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  const implicit = authorizeUrl({ client_id: pkce.clientId, redirect_uri: REDIRECT_URI, response_type: 'token', scope: '1', state: 's' })
  const refusedBy = (location: unknown): void => {
    t.notMatch(String(location), /#|access_token/, 'no fragment, no token')
    if (typeof location !== 'string' || !URL.canParse(location)) {
      t.fail(`a redirect to the client, not ${String(location)}`)
      return
    }
    const url = new URL(location)
    t.equal(`${url.origin}${url.pathname}`, REDIRECT_URI)
    t.equal(url.searchParams.get('error'), '96005')
    t.equal(url.searchParams.get('state'), 's')
  }
  const get = await browser.get(implicit)
  t.equal(get.statusCode, 302, 'GET redirects instead of asking for consent')
  refusedBy(get.headers.location)
  // A POST of "allow" straight away, with a CSRF token from another client's consent page.
  t.equal((await browser.get(authorizeUrl({ client_id: other.clientId, redirect_uri: REDIRECT_URI, response_type: 'code' }))).statusCode, 200)
  const post = await browser.post(implicit, { decision: 'allow' })
  t.equal(post.statusCode, 303, 'POST redirects too')
  refusedBy(post.headers.location)
})

t.test('the CLI refuses a PKCE client with the implicit grant, and a redirect URI presetting code', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const add = ['clients', 'add', '--name', 'N']
  const [pkce, preset] = await Promise.all([
    cli([...add, '--redirect-uri', 'https://a.example/cb', '--require-pkce', '--response-types', 'code,token'], env),
    cli([...add, '--redirect-uri', 'https://a.example/cb?code=x'], env)
  ])
  t.equal(pkce.code, 2, 'exit 2')
  t.equal(pkce.stdout, '')
  t.match(pkce.stderr, /^macgate: [^\n]*PKCE[^\n]*\n$/, `one line naming PKCE: ${pkce.stderr}`)
  t.equal(preset.code, 2, 'exit 2')
  t.equal(preset.stdout, '')
  t.match(preset.stderr, /^macgate: redirect URI https:\/\/a\.example\/cb\?code=x [^\n]*response parameters[^\n]*\n$/, preset.stderr)
  const store = await new RedisStore(redis.url, { prefix: redis.prefix }).connect()
  t.teardown(async () => await store.close())
  t.same(await store.listClients(), [], 'nothing was registered')
})

// --- redirect URIs presetting response parameters ------------------------------------------------

t.test('a redirect_uri presetting a response parameter gets the error page, never a redirect', async (t) => {
  const { app, store } = await buildTestApp(t)
  const { clientId } = await addClient(store)
  const user = await addUser(store)
  const signedIn = await signedInBrowser(app, user)
  for (const query of ['code=ATTACKER', 'state=x', 'error=1', 'error_description=x', 'other=1&code=ATTACKER']) {
    const url = authorizeUrl({ client_id: clientId, redirect_uri: `${REDIRECT_URI}?${query}`, response_type: 'code', state: 's' })
    for (const [who, response] of [['anonymous', await app.inject({ url })], ['signed in', await signedIn.get(url)]] as const) {
      t.equal(response.statusCode, 400, `?${query} (${who}): 400`)
      t.equal(response.headers.location, undefined, 'no redirect')
      t.match(response.headers['content-type'], /^text\/html/)
      t.equal(pageError(response.body), '96010', 'page shows 96010')
    }
  }
  const fine = await app.inject({ url: authorizeUrl({ client_id: clientId, redirect_uri: `${REDIRECT_URI}?other=1`, response_type: 'code' }) })
  t.equal(fine.statusCode, 302, '?other=1 still matches')
  t.match(fine.headers.location, /^\/oauth2\/signin\?/, 'on to sign-in')
  const allowed = await signedIn.decide(authorizeUrl({ client_id: clientId, redirect_uri: `${REDIRECT_URI}?other=1`, response_type: 'code' }), 'allow')
  const back = new URL(String(allowed.headers.location))
  t.equal(back.searchParams.get('other'), '1', 'extra data kept')
  t.equal(back.searchParams.getAll('code').length, 1, 'one code')

  for (const name of ['code', 'state', 'error', 'error_description']) {
    await t.rejects(addClient(store, { redirectUris: [`${REDIRECT_URI}?${name}=x`] }), { name: 'RegistrationError', message: /response parameters/ }, `registering ?${name}=x refused`)
  }
})

// --- macQueryVariants ------------------------------------------------------------------------------

t.test('macQueryVariants: the Java and documentation query forms, and switching them off', async (t) => {
  const cases = [
    { url: '/user/profile?q=x%2By', variant: 'q=x%2By', primary: 'q=x+y', what: 'form-encoded values (Java SDK)' },
    { url: '/user/profile?a=1&b=', variant: 'a=1', primary: 'a=1&b=', what: 'empty values left out (documentation)' }
  ]
  const on = await buildTestApp(t)
  const off = await buildTestApp(t, { macQueryVariants: false })
  const onToken = await liveToken(on.app)
  const offToken = await liveToken(off.app)
  for (const { url, variant, primary, what } of cases) {
    const byDefault = await signedInject(on.app, { url, token: onToken.accessToken, macKey: onToken.macKey, sign: { query: variant } })
    t.equal(byDefault.statusCode, 200, `default: ${what} accepted (${byDefault.body})`)
    const refused = await signedInject(off.app, { url, token: offToken.accessToken, macKey: offToken.macKey, sign: { query: variant } })
    t.equal(refused.statusCode, 401, `off: ${what} refused`)
    t.same(refused.json(), openApiError(96012, 'mac does not match'))
    t.match(refused.headers['www-authenticate'], /^MAC/)
    const plain = await signedInject(off.app, { url, token: offToken.accessToken, macKey: offToken.macKey, sign: { query: primary } })
    t.equal(plain.statusCode, 200, `off: the primary form ${primary} still accepted`)
  }
})

// --- browsers (contract §11) ------------------------------------------------------------------------

t.test('a preflight is never verified: no verification counted, no nonce spent on Redis, even when signed', async (t) => {
  const { app } = await buildTestApp(t, { store: 'redis' })
  const live = await liveToken(app)
  const counted = (): number => Object.values(app.macgate.metrics.verifications).reduce((sum, count) => sum + count, 0)
  const before = counted()
  const nonce = `${Date.now()}:${Math.floor(Date.now() / 60_000)}`
  const preflight = await signedInject(app, { method: 'OPTIONS', url: '/user/profile', token: live.accessToken, macKey: live.macKey, nonce, headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' } })
  t.equal(preflight.statusCode, 204)
  t.equal(counted(), before, 'the verifier never saw it')
  const call = await signedInject(app, { url: '/user/profile', token: live.accessToken, macKey: live.macKey, nonce, headers: { origin: 'https://app.example.com' } })
  t.equal(call.statusCode, 200, 'its nonce still unspent')
  t.equal(counted(), before + 1)
})

// --- the sample open API ---------------------------------------------------------------------------------

/** Inodes of this process's sockets. */
function ownSockets (): Set<string> {
  const inodes = new Set<string>()
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`))
      if (match !== null) inodes.add(match[1]!)
    } catch {}
  }
  return inodes
}

/** Rows of a /proc/net table, split on whitespace, header dropped. */
function procRows (file: string): string[][] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').slice(1).filter((line) => line.trim() !== '').map((line) => line.trim().split(/\s+/))
}

/** Inodes of this process's listening TCP sockets (state 0A), v4 and v6. */
function ownTcpListeners (): Set<string> {
  const own = ownSockets()
  const rows = [...procRows('/proc/net/tcp'), ...procRows('/proc/net/tcp6')]
  return new Set(rows.filter((row) => row[3] === '0A' && own.has(row[9]!)).map((row) => row[9]!))
}

/** Paths of this process's Unix sockets. */
function ownUnixPaths (): string[] {
  const own = ownSockets()
  return procRows('/proc/net/unix').filter((row) => own.has(row[6]!) && row[7] !== undefined).map((row) => row[7]!)
}

t.test('the sample open API is on a Unix socket in a private directory, not a TCP port', { skip: !existsSync('/proc/self/fd') && 'needs /proc' }, async (t) => {
  const before = ownTcpListeners()
  const { app } = await buildTestApp(t)
  const token = await liveToken(app)
  const profile = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })
  t.equal(profile.statusCode, 200, 'the sample API answers')
  t.equal(profile.json().result, 'ok')
  const added = [...ownTcpListeners()].filter((inode) => !before.has(inode))
  t.same(added, [], 'no new listening TCP socket')

  const socketPath = ownUnixPaths().find((path) => /\/macgate-sample-[^/]+\/api\.sock$/.test(path))
  t.ok(socketPath, 'a Unix socket under a macgate-sample- directory')
  if (socketPath === undefined) return
  const directory = dirname(socketPath)
  t.equal(statSync(directory).mode & 0o777, 0o700, 'its directory is 0700')
  t.equal(statSync(directory).uid, process.getuid?.(), 'owned by this user')
  await app.close()
  t.notOk(existsSync(directory), 'removed when the gateway closes')
})

// --- macgate start on a busy port --------------------------------------------------------------------------

t.test('macgate start on a busy port exits promptly, naming the port', async (t) => {
  const busy = createServer().listen(0, '127.0.0.1')
  await once(busy, 'listening')
  t.teardown(() => { busy.close() })
  const { port } = busy.address() as { port: number }
  const run = await cli(['start'], cliEnv({ PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent' }), { timeout: 15_000 })
  t.notOk(run.killed, `exited by itself (${run.ms} ms)`)
  t.ok(run.ms < 10_000, `within 10 s of spawning, start-up included (${run.ms} ms)`)
  t.not(run.code, 0, 'non-zero exit')
  t.ok(run.code !== null, 'an exit code, not a signal')
  t.match(run.stderr, `cannot listen on 127.0.0.1:${port}: EADDRINUSE`)
  t.notMatch(run.stderr, /\n {4}at /, 'no stack trace')
})
