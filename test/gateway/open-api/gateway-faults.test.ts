// Redis going away under a running gateway, coming back empty, and a graceful SIGTERM.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { Agent, createServer as createHttpServer, get as httpGet, type IncomingMessage } from 'node:http'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnSource } from '../../helpers/source.ts'
import { collectStrays } from '../../helpers/strays.ts'
import t, { type Test } from 'tap'
import { parseTokenResponse, signRequest, type TokenResponse } from '../../../plugin/client/index.ts'
import { mintMacKey, mintToken, newGrantId, randomBase64Url } from '../../../plugin/access/credentials.ts'
import { RedisStore } from '../../../plugin/store/redis/redis-store.ts'
import { addClient, addUser, REDIRECT_URI } from '../../helpers/app.ts'
import { codeExchange, eventually, issueTokens, liveGateway, pollUntilRefused, signedGet, tokenRequest, type LiveGateway } from '../../helpers/live.ts'
import { freePort, startRedis } from '../../helpers/redis.ts'
import { listenOnLoopback } from '../../helpers/listen.ts'

const UNAVAILABLE = { result: 'error', description: 'service temporarily unavailable', code: 96000 }
const TOKEN_UNAVAILABLE = '&&&START&&&{"error":96000,"error_description":"service temporarily unavailable"}'
const REVOKED = { result: 'error', description: 'access token invalid or expired', code: 96008 }

const shared = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''
const own = { skip: shared ? 'stops and restarts Redis: needs a redis-server of its own, not REDIS_URL' : false }

// Every store failure must become an answer, never a stray rejection.
const strays = collectStrays(t)
/** While Redis is down: the open API answers 503 96000 and the token endpoint its prefixed 96000, each within 3 s. */
async function assertUnavailable (t: Test, gateway: LiveGateway, tokens: TokenResponse, clientId: string, clientSecret: string): Promise<void> {
  for (let round = 0; round < 3; round++) {
    let started = Date.now()
    const api = await signedGet(gateway.origin, '/user/profile', tokens)
    t.equal(api.status, 503)
    t.same(api.body, UNAVAILABLE)
    t.ok(Date.now() - started < 3000, `open API answered 503 in ${Date.now() - started} ms`)
    started = Date.now()
    const token = await tokenRequest(gateway.origin, codeExchange(clientId, clientSecret, 'any-code'))
    t.equal(token.status, 503)
    t.equal(token.raw, TOKEN_UNAVAILABLE)
    t.equal(token.contentType, 'application/json;charset=UTF-8')
    t.ok(Date.now() - started < 3000, `token endpoint answered 503 in ${Date.now() - started} ms`)
  }
  const health = await fetch(`${gateway.origin}/healthz`)
  t.equal(health.status, 200, 'the process is alive')
  // A forged token needs no store: still refused as invalid.
  const forged = await signedGet(gateway.origin, '/user/profile', { access_token: `${randomBase64Url(12)}.${randomBase64Url(32)}${randomBase64Url(12)}`, mac_key: mintMacKey() })
  t.same(forged.body, REVOKED)
}

/** After Redis is back (empty): a client and token made now work on the same gateway instance, within 10 s. */
async function serveAgain (t: Test, issuer: LiveGateway, verifier: LiveGateway) {
  let fresh: { clientId: string, clientSecret: string, code: string, tokens: TokenResponse } | undefined
  const started = Date.now()
  const back = await eventually(async () => {
    const { clientId, clientSecret } = await addClient(issuer.store)
    const { code, tokens } = await issueTokens(issuer, clientId, clientSecret)
    fresh = { clientId, clientSecret, code, tokens }
    return (await signedGet(verifier.origin, '/user/profile', tokens)).status === 200
  }, 10_000, 200)
  t.ok(back, `served again ${Date.now() - started} ms after Redis came back`)
  if (fresh === undefined) throw new Error('the gateway never served again')
  return fresh
}

t.test('Redis stops under a gateway without a token cache', own, async (t) => {
  const redis = await startRedis(t)
  const gateway = await liveGateway(t, redis, randomBytes(32).toString('base64url'), { tokenCache: { max: 0, maxAgeMs: 300_000, negativeTtlMs: 10_000 } })
  const { clientId, clientSecret } = await addClient(gateway.store)
  const { tokens } = await issueTokens(gateway, clientId, clientSecret)
  t.equal((await signedGet(gateway.origin, '/user/profile', tokens)).status, 200)

  await redis.stop()
  await assertUnavailable(t, gateway, tokens, clientId, clientSecret)

  await redis.start()
  await serveAgain(t, gateway, gateway)
  const old = await signedGet(gateway.origin, '/user/profile', tokens)
  t.same(old.body, REVOKED, 'the token from before the restart is gone with the data')
  strays.check(t)
})

t.test('Redis stops under two gateways with warm token caches', own, async (t) => {
  const redis = await startRedis(t)
  const secret = randomBytes(32).toString('base64url')
  const a = await liveGateway(t, redis, secret)
  const b = await liveGateway(t, redis, secret)
  const { clientId, clientSecret } = await addClient(a.store)
  const { tokens } = await issueTokens(a, clientId, clientSecret)
  t.equal((await signedGet(a.origin, '/user/profile', tokens)).status, 200, 'A warmed')
  t.equal((await signedGet(b.origin, '/user/profile', tokens)).status, 200, 'B warmed')

  await redis.stop()
  // The token is in both LRUs; the nonce check still needs Redis.
  await assertUnavailable(t, a, tokens, clientId, clientSecret)
  await assertUnavailable(t, b, tokens, clientId, clientSecret)

  await redis.start()
  // Redis came back empty; the LRUs drop what they held once the subscription is renewed.
  const dropped = await eventually(async () => (await signedGet(b.origin, '/user/profile', tokens)).body.code === 96008, 5000, 100)
  t.ok(dropped, 'B stops serving the token Redis lost')

  const fresh = await serveAgain(t, a, b)
  t.equal((await signedGet(b.origin, '/user/profile', fresh.tokens)).status, 200, 'B holds the new token')
  const since = Date.now()
  const replay = await tokenRequest(a.origin, codeExchange(fresh.clientId, fresh.clientSecret, fresh.code))
  t.same(replay.body, { error: 96013, error_description: 'code already used' })
  const { last, elapsed } = await pollUntilRefused(b.origin, '/user/profile', fresh.tokens, since)
  t.same(last.body, REVOKED)
  t.ok(elapsed < 1000, `after the restart B still hears revocations: refused in ${elapsed} ms`)
  // Unknown tokens minted with the right secret are looked up and refused, not failed.
  t.same((await signedGet(b.origin, '/user/profile', { access_token: mintToken(secret, newGrantId()), mac_key: mintMacKey() })).body, REVOKED)
  strays.check(t)
})

/** A cookie jar over fetch, reading each form's CSRF token, to walk the code flow over HTTP. */
class HttpBrowser {
  readonly cookies = new Map<string, string>()
  csrf = ''
  readonly origin: string

  constructor (origin: string) {
    this.origin = origin
  }

  async go (path: string, form?: Record<string, string>): Promise<{ status: number, location: string | null }> {
    const headers: Record<string, string> = { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') }
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded'
    const response = await fetch(new URL(path, this.origin), {
      method: form === undefined ? 'GET' : 'POST',
      headers,
      redirect: 'manual',
      ...(form !== undefined && { body: new URLSearchParams({ _csrf: this.csrf, ...form }).toString() })
    })
    for (const cookie of response.headers.getSetCookie()) {
      const pair = cookie.split(';')[0]!
      this.cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1))
    }
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await response.text())
    if (csrf !== null) this.csrf = csrf[1]!
    return { status: response.status, location: response.headers.get('location') }
  }
}

/** A signed GET through a keep-alive node:http agent, as SDK clients hold their connections. */
async function keepAliveGet (url: string, tokens: TokenResponse, agent: Agent): Promise<{ status: number, body: unknown }> {
  const authorization = signRequest({ method: 'GET', url, accessToken: tokens.access_token, macKey: tokens.mac_key })
  return await new Promise((resolve, reject) => {
    httpGet(url, { agent, headers: { authorization } }, (response) => {
      let body = ''
      response.on('data', (chunk) => { body += String(chunk) })
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(body) }))
    }).on('error', reject)
  })
}

/** Resolves to the connect error's code (ECONNREFUSED), or 'connected'. */
async function probe (port: number): Promise<string> {
  const socket = connect(port, '127.0.0.1')
  return await new Promise((resolve) => {
    socket.once('connect', () => { socket.destroy(); resolve('connected') })
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
  })
}

/**
 * How long the upstream takes to answer the request in flight at SIGTERM: the listener's closing is
 * watched for within it, less half a second, so that a loaded machine (a child process handling the
 * signal late) still shows the drain while the request is in flight.
 */
const SLOW_UPSTREAM_MS = 2500

t.test('SIGTERM drains the in-flight request, exits 0 and refuses new connections', async (t) => {
  const redis = await startRedis(t)
  const received: IncomingMessage[] = []
  const upstream = createHttpServer((request, response) => {
    received.push(request)
    setTimeout(() => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ result: 'ok', openId: request.headers['x-macgate-open-id'], authorization: request.headers.authorization ?? null }))
    }, SLOW_UPSTREAM_MS)
  })
  const upstreamUrl = await listenOnLoopback(t, upstream)
  const dir = await mkdtemp(join(tmpdir(), 'macgate-faults-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const configFile = join(dir, 'config.json')
  await writeFile(configFile, JSON.stringify({ upstream: upstreamUrl, routes: [{ path: '/slow', methods: ['GET'], scopes: [] }] }))

  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix, PORT: String(port), ADMIN_PORT: '0', LOG_LEVEL: 'warn' }
  for (const name of ['MACGATE_SECRET', 'HOST', 'NODE_OPTIONS', 'MACGATE_UPSTREAM']) delete env[name]
  const child = spawnSource('gateway/cli.ts', ['start', '--config', configFile], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk) => { output += String(chunk) })
  child.stderr!.on('data', (chunk) => { output += String(chunk) })
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const origin = `http://127.0.0.1:${port}`
  t.ok(await eventually(async () => (await fetch(`${origin}/healthz`)).status === 200, 20_000, 200), 'the gateway is up')

  // A client and user through the shared store; the code flow over HTTP, as a browser walks it.
  const store = await new RedisStore(redis.url, { prefix: redis.prefix }).connect()
  t.teardown(async () => { await store.close() })
  const { clientId, clientSecret } = await addClient(store)
  const user = await addUser(store)
  const authorize = `/oauth2/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' }).toString()}`
  const browser = new HttpBrowser(origin)
  await browser.go(`/oauth2/signin?${new URLSearchParams({ return_to: authorize }).toString()}`)
  t.same(await browser.go('/oauth2/signin', { username: user.username, password: user.password, return_to: authorize }), { status: 303, location: authorize })
  await browser.go(authorize)
  const allowed = await browser.go(authorize, { decision: 'allow' })
  t.equal(allowed.status, 303)
  const code = new URL(allowed.location!).searchParams.get('code')!
  const exchange = await tokenRequest(origin, codeExchange(clientId, clientSecret, code))
  t.equal(exchange.status, 200)
  const tokens = parseTokenResponse(exchange.raw)

  const agent = new Agent({ keepAlive: true })
  t.teardown(() => agent.destroy())
  let answered = false
  const inflight = keepAliveGet(`${origin}/slow`, tokens, agent).finally(() => { answered = true })
  t.ok(await eventually(async () => received.length === 1, 5000, 10), 'the request reached the slow upstream')
  const sigtermAt = Date.now()
  child.kill('SIGTERM')
  // The listener closes at SIGTERM: watched for while the upstream still holds the request.
  t.ok(await eventually(async () => await probe(port) === 'ECONNREFUSED', SLOW_UPSTREAM_MS - 500, 10), 'a new connection during the drain is refused')
  t.equal(answered, false, 'the request was still in flight when the refusal was seen')

  const answer = await inflight
  t.equal(answer.status, 200, 'the in-flight request completed')
  t.same(answer.body, { result: 'ok', openId: tokens.openId, authorization: null })
  t.ok(Date.now() - sigtermAt >= SLOW_UPSTREAM_MS - 300, 'it was answered after the upstream, not cut short')

  // A connection whose request was in flight at SIGTERM is kept alive by this agent: the
  // shutdown must still end within 5 s, not wait for the client or the keep-alive timeout.
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 5000).unref())
  const ended = await Promise.race([exited, timeout])
  t.not(ended, 'timeout', ended === 'timeout' ? 'exited within 5 s of SIGTERM (still running after 5 s)' : `exited ${Date.now() - sigtermAt} ms after SIGTERM`)
  if (ended !== 'timeout') t.same(ended, [0, null], 'exit code 0')
  t.equal(await probe(port), 'ECONNREFUSED', 'connections are refused after exit')
  t.notMatch(output, /"level":(50|60)/, `no error logged: ${output}`)
})

strays.checkLast(t)
