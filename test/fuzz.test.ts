// A seeded fuzz of every endpoint on a real Redis: 4,000 random and malformed requests through
// inject (20,000 with FUZZ_FULL=1: test/helpers/fuzz-size.ts), a few hundred over raw sockets for what inject cannot express (request lines, header
// bytes), and a few hundred while Redis is down. Asserted in aggregate, per category: no 5xx but
// the outage's 503 96000, every answer of its endpoint's kind (an HTML page, a `&&&START&&&` token
// body, the open API's JSON), no unhandled rejection or exception, and a known-good signed request
// still served at the end. The seeds are in the test names; FUZZ_SEED=<n> runs another, and
// FUZZ_REPORT=<file> writes one example of every kind of failure found.
import { BROKEN_ESCAPES, CONTROLS, decodedOr, enc, FORM, generator, INVALID_UTF8, PREFIX, REGISTERED_ORIGIN, type Gen } from './helpers/fuzz-pools.ts'
import { fuzzCount } from './helpers/fuzz-size.ts'
import { dechunk } from './helpers/dechunk.ts'
import { collectStrays } from './helpers/strays.ts'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { appendFileSync } from 'node:fs'
import { connect } from 'node:net'
import t, { type Test } from 'tap'
import { buildGateway } from '../gateway/index.ts'
import { RedisStore } from '../plugin/store/redis/redis-store.ts'
import { addClient, addPublicClient, addUser, authorizeUrl, InjectBrowser, REDIRECT_URI, SPA_ORIGIN } from './helpers/app.ts'
import { API_HOST, defaultAuthorization, echoRoutes, hmac, liveToken, signedInject, signedString, type LiveTokens, type SignedParts } from './helpers/gateway.ts'
import { startRedis, type TestRedis } from './helpers/redis.ts'

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eedf022) >>> 0
const OUTAGE_SEED = (SEED ^ 0x0b5e55ed) >>> 0
const INJECT_COUNT = fuzzCount(20_000)
const RAW_COUNT = 400
const BATCH = 50
const RAW_BATCH = 25
const RAW_TIMEOUT_MS = 5000
// Origins browsers may send (contract §11): the confidential clients' (the tokens'), a public
// client's (SPA_ORIGIN, the token endpoint's only CORS origin), and ones no client registered.
const ORIGINS = [REGISTERED_ORIGIN, REGISTERED_ORIGIN, SPA_ORIGIN, SPA_ORIGIN, 'https://evil.example', 'null', 'https://app.example.com:443', 'HTTPS://APP.EXAMPLE.COM',
  `${REGISTERED_ORIGIN}/`, `${SPA_ORIGIN}.evil.example`, 'x'.repeat(300), '*', 'ü', `${SPA_ORIGIN}, ${REGISTERED_ORIGIN}`]
const REQUEST_METHODS = ['GET', 'POST', 'DELETE', 'OPTIONS', 'get', '', 'X'.repeat(100)]
const REQUEST_HEADERS = ['authorization', 'authorization, content-type', 'Authorization,Content-Type,X-Trace', 'x-macgate-user-id, x_macgate_scope', 'connection, upgrade, te',
  'x-http-method-override', 'x-forwarded-for, forwarded', ',,,', 'a b, c', 'X'.repeat(5000), Array.from({ length: 200 }, (_, n) => `x-${n}`).join(',')]
const SECRET = 'fuzz-test-secret-0123456789abcdef'

const totals = { requests: 0, started: Date.now() }
const shared = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''
const own = { skip: shared ? 'stops and restarts Redis: needs a redis-server of its own, not REDIS_URL' : false }

// Every store failure must become an answer, never a stray rejection.
const strays = collectStrays(t)

// ---- pools ----------------------------------------------------------------------------------

const LONG = 'x'.repeat(100 * 1024)
const LENGTHS = [1025, 2049, 4097, 8192, 30_000, 100 * 1024]
const BAD_ESCAPES = [...INVALID_UTF8, ...BROKEN_ESCAPES, '%F0%28%8C%BC', '%C0%AF', 'a%', '%E2%82']
const ODD_VALUES = ['', ' ', 'ü', '<script>alert(1)</script>', '../../etc/passwd', 'null', '0', '-1', '9'.repeat(30), '1e309', '[]', '{}', '\u202e', '𝕏', 'true']
const ODD_NAMES = ['__proto__', 'constructor', 'hasOwnProperty', 'toString', '', '%zz', '%FF', 'a[b]', 'a.b', 'ü', 'token', 'clientId', '%74oken']
const BASE_PATHS = ['/', '/oauth2', '/oauth2/', '/oauth2/authorize', '/oauth2/token', '/oauth2/signin', '/oauth2/signout', '/oauth2/revoke',
  '/oauth2/introspect', '/oauth2/rfc/token', '/.well-known/oauth-authorization-server', '/user/profile', '/user/openidV2', '/user/phoneAndEmail', '/user', '/user/',
  '/echo', '/echo/', '/echo/a/b', '/demo', '/demo/start', '/demo/callback', '/healthz', '/favicon.ico', '/unknown/x']
const SEGMENTS = ['..', '.', '%2e%2e', '%2E', '%2F', '', 'a', '%00', '%FF', '%C3%28', 'ü', 'x'.repeat(300), '~', ';a=b', '%20', '+', '%2f..%2f', '%5C', '\\', 'oauth2', 'token', '%25', '%']
const INJECT_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'PROPFIND', 'MKCOL', 'TRACE', 'SEARCH', 'LOCK', 'COPY', 'MOVE', 'PURGE', 'REPORT', 'QUERY']
const CONTENT_TYPES = [FORM, FORM, FORM, `${FORM}; charset=utf-8`, `${FORM}; charset=iso-8859-1`, 'APPLICATION/X-WWW-FORM-URLENCODED', `${FORM}XYZ`, `${FORM}, text/html`,
  'application/json', 'text/plain', 'multipart/form-data; boundary=zz', 'application/octet-stream', '', ';', 'text/html; charset=utf-7']
const HOP_BY_HOP: Array<Record<string, string>> = [
  { connection: 'close' }, { connection: 'keep-alive' }, { connection: 'upgrade', upgrade: 'websocket' }, { connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQCAAAAAAIAAAAA' },
  { connection: 'x-secret, te', 'x-secret': 'y', te: 'trailers' }, { connection: 'Keep-Alive, Trailer', 'keep-alive': 'timeout=5, max=1000', trailer: 'Expires' },
  { 'keep-alive': 'garbage=' }, { te: 'gzip, chunked;q=0.5' }, { te: 'trailers' }, { trailer: 'x-a, x-b' }, { upgrade: 'websocket' }, { upgrade: '\x80\xff' },
  { connection: 'authorization' }, { connection: 'host' }, { connection: ',,, ,' }, { 'proxy-connection': 'keep-alive' }, { connection: 'x-macgate-open-id, x-macgate-scope' },
  { expect: '100-continue' }, { connection: 'close, close, close' }
]
const SPOOFS: Array<Record<string, string>> = [
  { 'x-macgate-open-id': 'evil' }, { 'x-macgate-scope': '1 2 3 4 6 1000' }, { x_macgate_user_id: 'root' }, { 'x-macgate_client-id': '1' },
  { 'X-MACGATE-USER-ID': 'root' }, { 'x-macgate-': 'x' }, { 'x-macgate-extra': 'x' }
]
const ODD_HEADER_NAMES = ["!#$%&'*+-.^_`|~", 'x-forwarded-for', 'x-forwarded-host', 'forwarded', 'x-http-method-override', 'x-real-ip', 'a'.repeat(300), 'x--', 'X-UPPER', 'cookie', 'user-agent', 'origin', 'referer']
// Header values as they can arrive over HTTP: no CR, LF or NUL, no leading or trailing whitespace.
const HEADER_VALUES = ['x', 'evil.example', '127.0.0.1', 'DELETE', 'for=1.2.3.4;host=evil', '\x80\xff\xc3\x28', 'a\tb', '""', 'null', 'ü', '%00', '<script>']

// ---- the world: live credentials the fuzz draws on ----------------------------------------

interface World {
  /** Signs the valid requests: its refresh token and code are never fuzzed, so it stays live. */
  main: LiveTokens
  /** Its client, refresh token and codes feed the token endpoint; it may be revoked by the fuzz. */
  spare: LiveTokens
  codes: string[]
  /** A signed-in session the fuzz never signs out, to reach the consent page and code issuance. */
  session: Session
  /** Another, for the sign-out fuzz (sign-out ends a session in the store). */
  exit: Session
  /** Valid signed requests already answered, for replays. */
  sent: Array<{ method: string, url: string, authorization: string }>
  /** A public client on SPA_ORIGIN. */
  spa: string
}

interface Session { cookie: string, csrf: string }

interface FuzzGateway { app: FastifyInstance, store: RedisStore, port: number }

/** The gateway with the echo route and a configured demo client, on `redis`, listening on loopback. */
async function fuzzGateway (t: Test, redis: TestRedis): Promise<FuzzGateway> {
  const store = await new RedisStore(redis.url, { prefix: redis.prefix }).connect()
  const { clientId, clientSecret } = await addClient(store)
  const app = await buildGateway({ store, secret: SECRET, config: { routes: [...echoRoutes, ...QUOTA_ROUTES] }, demo: { clientId, clientSecret, redirectUri: REDIRECT_URI } })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, store, port: (app.server.address() as { port: number }).port }
}

async function signedIn (app: FastifyInstance, user: { username: string, password: string }): Promise<InjectBrowser> {
  const browser = new InjectBrowser(app)
  await browser.signIn(user.username, user.password)
  return browser
}

async function provision (app: FastifyInstance): Promise<World> {
  const main = await liveToken(app)
  const spare = await liveToken(app)
  const user = await addUser(app.macgate.store)
  const browser = await signedIn(app, user)
  const exit = await signedIn(app, user)
  const codes: string[] = []
  for (let i = 0; i < 30; i++) {
    const answer = await browser.decide(authorizeUrl({ client_id: spare.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1 3' }), 'allow')
    codes.push(new URL(String(answer.headers.location)).searchParams.get('code')!)
  }
  const { clientId: spa } = await addPublicClient(app.macgate.store)
  return { main, spare, codes, session: { cookie: browser.cookie, csrf: browser.lastCsrf }, exit: { cookie: exit.cookie, csrf: exit.lastCsrf }, sent: [], spa }
}

// ---- inject probes --------------------------------------------------------------------------

/** What an answer must be: a page, a token body, the open API's JSON, the health check, or any of them. */
type Kind = 'page' | 'token' | 'api' | 'health' | 'standard' | 'icon' | 'any'

interface Probe {
  label: string
  method: string
  /** Path and query exactly as the gateway receives them. */
  url: string
  headers: Record<string, string>
  payload?: string
  remoteAddress: string
  /** A correctly signed request to a configured route: it must be served. */
  expectServed?: boolean
  /** A signed request that must be refused: its nonce was used, or a token/clientId parameter does not match. */
  expectRefused?: 'replay' | 'binding'
  /** The open ID the upstream must see, for served /echo requests. */
  openId?: string
}

/**
 * The URL light-my-request hands the server: WHATWG-parsed, dot segments resolved, no fragment.
 * A backslash would make it a host (`/\\a` is `//a`): inject gets it encoded, raw sockets send it.
 */
function asSent (target: string): string {
  const url = target.replaceAll('\\', '%5C')
  const parsed = new URL(url.startsWith('//') ? `http://localhost${url}` : url, 'http://localhost')
  return parsed.pathname + parsed.search
}

function nonceFor (g: Gen, offsetMinutes = 0): string {
  return `${g.int(2 ** 31) * 65536 + g.int(65536)}:${Math.floor(Date.now() / 60000) + offsetMinutes}`
}

function macOf (tokens: LiveTokens, method: string, url: string, nonce: string, host = API_HOST): string {
  return hmac(tokens.macKey, signedString({ method, url, nonce, host, token: tokens.accessToken, macKey: tokens.macKey }))
}

/** Pairs of an already-encoded name and value (undefined: the name alone). */
type Pairs = Array<[string, string | undefined]>

/** Mostly the well-formed value, so that many requests get past the first checks to the later ones. */
function fuzzValue (g: Gen, good: string): string {
  if (g.chance(0.7)) return enc(good)
  switch (g.int(10)) {
    case 0: return enc(g.pick(ODD_VALUES))
    case 1: return LONG.slice(0, g.pick(LENGTHS))
    case 2: return g.pick(BAD_ESCAPES)
    case 3: return enc(good) + g.pick(BAD_ESCAPES)
    case 4: return g.pick(CONTROLS)
    case 5: return enc(good) + g.pick(CONTROLS)
    case 6: return good.replaceAll(' ', '+') + g.pick([' ', 'ü', '"', '<', '+', '&', '='])
    case 7: return enc(enc(good))
    case 8: return enc(good.toUpperCase())
    default: return ''
  }
}

/** A subset of `good`, values fuzzed, then pair-level damage: repeats, junk names, 1,000 parameters. */
function fuzzPairs (g: Gen, good: Record<string, string>): Pairs {
  const pairs: Pairs = Object.entries(good).filter(() => g.chance(0.9)).map(([name, value]) => [name, fuzzValue(g, value)])
  if (pairs.length > 0 && g.chance(0.12)) pairs.push([...g.pick(pairs)])
  if (g.chance(0.06)) pairs.push([g.pick(ODD_NAMES), enc(g.pick(ODD_VALUES))])
  if (g.chance(0.04)) pairs.push([g.pick(['', '=', '&', '&&', 'a']), undefined])
  if (g.chance(0.02)) for (let n = 0; n < 1000; n++) pairs.push([`p${n}`, String(n)])
  if (pairs.length > 1 && g.chance(0.2)) pairs.reverse()
  return pairs
}

function joinPairs (pairs: Pairs): string {
  return pairs.map(([name, value]) => value === undefined ? name : `${name}=${value}`).join('&')
}

function withQuery (path: string, query: string): string {
  return query === '' ? path : `${path}?${query}`
}

function address (g: Gen): string {
  return `198.51.100.${g.int(256)}`
}

/** A form body with a fuzzed content type, sometimes padded past the body limits. */
function fuzzBody (g: Gen, probe: Probe, form: string): void {
  const roll = g.next()
  const padding = roll < 0.03 ? `&pad=${LONG.slice(0, 16 * 1024)}` : roll < 0.05 ? `&pad=${LONG}` : roll < 0.052 ? `&pad=${LONG.repeat(11)}` : ''
  const type = g.chance(0.7) ? FORM : g.pick(CONTENT_TYPES)
  if (type === 'application/json') {
    probe.payload = JSON.stringify(Object.fromEntries(form.split('&').map((pair) => [pair.split('=')[0], g.pick<unknown>([pair.split('=')[1] ?? '', 12345, { a: 1 }, true, [1, 2], null])])))
  } else if (type.startsWith('multipart')) {
    probe.payload = `--zz\r\nContent-Disposition: form-data; name="a"\r\n\r\n${form}\r\n--zz--\r\n`
  } else {
    probe.payload = form + padding
  }
  if (type !== '' || g.chance(0.5)) probe.headers['content-type'] = type
}

function probeOf (g: Gen, label: string, method: string, url: string): Probe {
  return { label, method, url: asSent(url), headers: {}, remoteAddress: address(g) }
}

function authorizeProbe (g: Gen, world: World, label: string): Probe {
  const good: Record<string, string> = {
    client_id: g.chance(0.85) ? world.spare.clientId : g.pick(['1', '0', '-5', '9223372036854775808', '１２３', `${world.spare.clientId}0`, 'abc']),
    redirect_uri: g.chance(0.85) ? REDIRECT_URI : g.pick([`${REDIRECT_URI}?code=1`, `${REDIRECT_URI}#f`, 'https://evil.example/callback', 'javascript:alert(1)', '//evil.example/', 'https://app.example.com/callback/../callback']),
    response_type: g.chance(0.7) ? 'code' : g.pick(['token', 'id_token', 'code token']),
    scope: g.chance(0.6) ? '1 3' : g.pick(['1', '999', '1   3', '', '6 4', '2'])
  }
  if (g.chance(0.5)) good.state = g.pick(['abc', 'ü', 'x'.repeat(3000), '<b>'])
  if (g.chance(0.3)) good.skip_confirm = g.pick(['true', 'false', 'yes'])
  if (g.chance(0.2)) Object.assign(good, { code_challenge: g.pick(['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', 'short']), code_challenge_method: g.pick(['S256', 'plain']) })
  const query = joinPairs(fuzzPairs(g, good))
  const post = g.chance(0.3)
  const probe = probeOf(g, label, post ? 'POST' : 'GET', withQuery('/oauth2/authorize', query))
  if (g.chance(0.5)) probe.headers.cookie = world.session.cookie
  if (post) fuzzBody(g, probe, joinPairs(fuzzPairs(g, { decision: g.pick(['allow', 'deny', 'maybe']), _csrf: g.chance(0.6) ? world.session.csrf : 'bogus' })))
  return probe
}

function signInProbe (g: Gen, world: World, label: string): Probe {
  const returnTo = g.pick([authorizeUrl({ client_id: world.spare.clientId, redirect_uri: REDIRECT_URI, response_type: 'code' }), '//evil.example/oauth2/authorize?', 'https://evil.example/', '/oauth2/signout', '/oauth2/authorize?\u00e9'])
  if (g.chance(0.45)) return probeOf(g, label, 'GET', withQuery('/oauth2/signin', joinPairs(fuzzPairs(g, { return_to: returnTo }))))
  const probe = probeOf(g, label, 'POST', '/oauth2/signin')
  // A valid session and CSRF token reach the password check (scrypt): only now and then.
  const deep = g.chance(0.03)
  const csrf = deep ? world.session.csrf : g.pick(['bogus', '', world.session.csrf])
  if (deep || g.chance(0.5)) probe.headers.cookie = world.session.cookie
  fuzzBody(g, probe, joinPairs(fuzzPairs(g, { username: g.pick(['nobody', 'alice', '<b>x</b>', 'ü']), password: 'wrong password', return_to: returnTo, _csrf: csrf })))
  return probe
}

function signOutProbe (g: Gen, world: World, label: string): Probe {
  const probe = probeOf(g, label, 'POST', withQuery('/oauth2/signout', g.chance(0.2) ? joinPairs(fuzzPairs(g, { return_to: '/oauth2/authorize?a=1' })) : ''))
  if (g.chance(0.6)) probe.headers.cookie = world.exit.cookie
  fuzzBody(g, probe, joinPairs(fuzzPairs(g, { return_to: g.pick(['/oauth2/authorize?client_id=1', 'https://evil.example/', '']), _csrf: g.chance(0.5) ? world.exit.csrf : 'bogus' })))
  return probe
}

function tokenProbe (g: Gen, world: World, label: string): Probe {
  const refresh = g.chance(0.35)
  const good: Record<string, string> = {
    grant_type: g.chance(0.85) ? (refresh ? 'refresh_token' : 'authorization_code') : g.pick(['password', 'client_credentials', '', 'AUTHORIZATION_CODE']),
    client_id: g.chance(0.85) ? world.spare.clientId : g.pick(['1', '0', 'abc', world.main.clientId]),
    client_secret: g.chance(0.8) ? world.spare.clientSecret : g.pick(['wrong', '', world.main.clientSecret]),
    redirect_uri: g.chance(0.85) ? REDIRECT_URI : g.pick([`${REDIRECT_URI}?x=1`, 'https://evil.example/callback']),
    [refresh ? 'refresh_token' : 'code']: g.chance(0.5) ? (refresh ? world.spare.refreshToken : g.pick(world.codes)) : g.pick(['', 'abc', `${'A'.repeat(16)}.${'B'.repeat(40)}`, world.main.accessToken])
  }
  if (g.chance(0.3)) good.token_type = g.pick(['mac', 'bearer'])
  if (g.chance(0.1)) good.code_verifier = g.pick(['a'.repeat(43), 'short'])
  if (g.chance(0.1)) good.scope = g.pick(['1', '1 3 4 6 1000', ''])
  const form = joinPairs(fuzzPairs(g, good))
  const post = g.chance(0.5)
  // A POST goes to either token endpoint: the Xiaomi one or the RFC 6749 one, the same grants.
  const endpoint = post && g.chance(0.3) ? '/oauth2/rfc/token' : '/oauth2/token'
  const probe = probeOf(g, label, post ? 'POST' : 'GET', post ? withQuery(endpoint, g.chance(0.1) ? 'grant_type=refresh_token' : '') : withQuery(endpoint, form))
  if (post) fuzzBody(g, probe, form)
  if (g.chance(0.1)) {
    const basic = Buffer.from(`${world.spare.clientId}:${g.pick([world.spare.clientSecret, 'wrong', '%zz', ''])}`).toString('base64')
    probe.headers.authorization = g.pick([`Basic ${basic}`, 'Basic !!!!', 'Basic', `Basic ${'A'.repeat(5000)}`, `basic ${basic}`, `Basic ${Buffer.from('no colon').toString('base64')}`])
  }
  return probe
}

const API_TARGETS: Array<[string, string]> = [['GET', '/user/profile'], ['GET', '/user/openidV2'], ['GET', '/user/phoneAndEmail'], ['GET', '/echo/a'], ['POST', '/echo/form'], ['GET', '/echo/q/a'], ['POST', '/echo/low/a']]

/** Limited routes (README, "Quotas"): one never reached, one the fuzz goes over at once. */
const QUOTA_ROUTES = [
  { path: '/echo/q/*', methods: ['GET', 'POST'], scopes: [], match: 'all' as const, quota: { perMinute: 1_000_000 } },
  { path: '/echo/low/*', methods: ['GET', 'POST'], scopes: [], match: 'all' as const, quota: { perMinute: 5 } }
]

/** A path under a limited route, whose every answer from the MAC check carries the RateLimit fields. */
function limitedPath (url: string): boolean {
  return url.startsWith('/echo/q/') || url.startsWith('/echo/low/')
}

// A request the gateway passes on must fit the upstream's 16 KiB of request line and headers (Node's
// default): longer ones get the upstream's own 431, not the gateway's answer. Unsigned ones go longer.
const UPSTREAM_QUERY_LIMIT = 6000

function apiQuery (g: Gen, world: World): string {
  if (g.chance(0.4)) return ''
  const good: Record<string, string> = { a: 'b', ü: 'ß', empty: '', plus: 'a+b c' }
  if (g.chance(0.2)) good.token = g.chance(0.7) ? world.main.accessToken : 'other'
  if (g.chance(0.2)) good.clientId = g.chance(0.7) ? world.main.clientId : '1'
  return joinPairs(fuzzPairs(g, good)).slice(0, UPSTREAM_QUERY_LIMIT)
}

/** Valid per contract §6: spacing, case, order and percent-encoding of the values vary. */
const VALID_FORMATS: Array<(parts: SignedParts) => string> = [
  defaultAuthorization,
  ({ token, nonce, mac }) => `MAC access_token="${token}",nonce="${nonce}",mac="${mac}"`,
  ({ token, nonce, mac }) => `mac access_token = "${token}" ,\tnonce="${nonce}" , mac="${mac}" ,`,
  ({ token, nonce, mac }) => `MAC mac="${mac}", access_token="${token}", nonce="${nonce}"`,
  ({ token, nonce, mac }) => `MAC access_token="${percentAll(token)}", nonce="${percentAll(nonce)}", mac="${percentAll(mac)}"`
]

function percentAll (text: string): string {
  return [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('')
}

function flip (text: string, g: Gen): string {
  const at = g.int(text.length)
  const replacement = text[at] === 'A' ? 'B' : 'A'
  return text.slice(0, at) + replacement + text.slice(at + 1)
}

/** A header derived from a valid signature with one part broken. */
function brokenAuthorization (g: Gen, world: World, method: string, url: string, host: string): string {
  const resign = (nonce: string): SignedParts => ({ token: world.main.accessToken, nonce, mac: macOf(world.main, method, url, nonce, host) })
  const parts = resign(nonceFor(g))
  const valid = defaultAuthorization(parts)
  const { token, nonce, mac } = parts
  const minute = Math.floor(Date.now() / 60000)
  const mutations: Array<() => string> = [
    () => defaultAuthorization({ ...parts, mac: flip(mac, g) }),
    () => defaultAuthorization({ ...parts, mac: g.pick([mac.toLowerCase(), mac.slice(0, -2), mac + mac, '', mac.replaceAll('+', ' ')]) }),
    () => defaultAuthorization({ ...parts, token: g.pick([token.slice(0, -1), world.spare.accessToken, world.spare.refreshToken, `${'A'.repeat(16)}.${'B'.repeat(43)}`, token + 'x', '.', '']) }),
    () => defaultAuthorization({ ...parts, token: world.spare.accessToken, mac: macOf(world.spare, method, url, nonce, host) }),
    () => defaultAuthorization(resign(g.pick([`1:${minute + 6}`, `1:${minute - 6}`, `2:${minute + 60}`, '3:0', '4:999999999999', '5:1234567890123', '6:-1', '7:1e3', `:${minute}`, 'R',
      `8:${minute}:9`, `a b:${minute}`, `${'9'.repeat(65)}:${minute}`, `${'9'.repeat(64)}:${minute}`, `-5:${minute}`, `ü${g.int(1e9)}:${minute}`, `${g.int(1e9)}: ${minute}`, `${g.int(1e9)}:${minute}.5`, `${g.int(1e9)}:０`]))),
    () => `${valid}, ${g.pick(['ext="x"', 'ts="1"', 'MAC="x"', 'id="x"', 'access_token=""', 'a'])}`,
    () => `${valid}, ${g.pick([`mac="${mac}"`, `nonce="${nonce}"`, `access_token="${token}"`, `mac="${flip(mac, g)}"`])}`,
    () => g.pick([`MAC nonce="${nonce}", mac="${mac}"`, `MAC access_token="${token}", mac="${mac}"`, `MAC access_token="${token}", nonce="${nonce}"`]),
    () => valid.replace(/"([^"]+)"/, (_match, inner: string) => `"${inner.slice(0, 3)}${g.pick(['%zz', '%', '%FF', '%C3%28', '%00', '%0D%0A'])}${inner.slice(3)}"`),
    () => g.pick([`Bearer ${token}`, 'MAC', 'MAC ', `MACaccess_token="${token}"`, `HMAC ${valid.slice(4)}`, `MAC, ${valid.slice(4)}`, 'Basic Zm9vOmJhcg==', valid.replace('MAC ', 'MAC\u00a0'), `${valid}\t,`]),
    () => g.pick([`MAC access_token=${token}, nonce=${nonce}, mac=${mac}`, `MAC access_token='${token}', nonce='${nonce}', mac='${mac}'`, valid.slice(0, -1), `${valid.slice(0, -1)}\\""`, valid.replaceAll('"', '""')]),
    () => g.pick([`${valid}${' '.repeat(4096)}`, `MAC access_token="${token}", nonce="${nonce}", mac="${'A'.repeat(7000)}"`, valid + ','.repeat(4000)]),
    () => defaultAuthorization({ ...parts, mac: macOf(world.main, g.pick(['POST', 'get', 'HEAD']), url, nonce, host) }),
    () => defaultAuthorization({ ...parts, mac: macOf(world.main, method, `${url}${url.includes('?') ? '&' : '?'}extra=1`, nonce, host) }),
    () => defaultAuthorization({ ...parts, mac: macOf(world.main, method, url, nonce, g.pick(['evil.example', 'api.example.com.', '127.0.0.1'])) })
  ]
  return g.pick(mutations)()
}

function macProbe (g: Gen, world: World, label: string): Probe {
  const [method, path] = g.pick(API_TARGETS)
  const probe = probeOf(g, label, method, withQuery(path, apiQuery(g, world)))
  const host = g.pick([API_HOST, API_HOST, 'API.Example.COM:8443', '127.0.0.1:3000', '[::1]:8080'])
  probe.headers.host = host
  probe.headers.authorization = brokenAuthorization(g, world, probe.method, probe.url, host)
  if (method === 'POST') fuzzBody(g, probe, 'a=1')
  return probe
}

/** A correctly signed request to a configured route, with a valid header format and noise around it. */
function validProbe (g: Gen, world: World, label: string): Probe {
  const [method, path] = g.pick(API_TARGETS)
  const suffix = path.startsWith('/echo/') ? g.pick(['', '/x', '/ü', '/%20', '/a%2Fb', '/..%2F', '/~', '/%FF', '/%00']) : ''
  const probe = probeOf(g, label, method, withQuery(path + suffix, apiQuery(g, world)))
  const host = g.pick([API_HOST, API_HOST, 'API.example.com:443'])
  // Inside the 5-minute window even if a minute turns while the batch runs.
  const nonce = nonceFor(g, g.pick([0, 0, 0, -4, 4]))
  probe.headers.host = host
  probe.headers.authorization = g.pick(VALID_FORMATS)({ token: world.main.accessToken, nonce, mac: macOf(world.main, probe.method, probe.url, nonce, host) })
  if (method === 'POST' || g.chance(0.05)) fuzzBody(g, probe, g.pick(['a=1', 'x'.repeat(2000), '%FF=%zz', '{"a":1}']))
  // Contract §6: a token or clientId parameter, by its decoded name, must match, else 96012.
  // A path that is not UTF-8 or climbs with `..`, or a malformed Content-Type, is refused (4xx).
  const readable = decodedOr(suffix, '') !== '' || suffix === ''
  // (Fastify cannot parse those three types: 415.) The sample upstream takes bodies up to 1 MiB.
  const malformedType = ['', ';', `${FORM}, text/html`].includes(String(probe.headers['content-type']))
  const tooLarge = typeof probe.payload === 'string' && probe.payload.length > 1024 * 1024
  if (!bindingsMatch(probe.url, world)) probe.expectRefused = 'binding'
  // The low quota's route refuses all but its first few (429): served or not, never judged served.
  else if (readable && !suffix.includes('..') && !malformedType && !tooLarge && !path.startsWith('/echo/low/')) probe.expectServed = true
  probe.openId = world.main.openId
  return probe
}

function bindingsMatch (url: string, world: World): boolean {
  const params = new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '')
  return params.getAll('token').every((value) => value === world.main.accessToken) && params.getAll('clientId').every((value) => value === world.main.clientId)
}

function replayProbe (g: Gen, world: World, label: string): Probe {
  if (world.sent.length === 0) return validProbe(g, world, label)
  const earlier = g.pick(world.sent)
  const probe = probeOf(g, label, earlier.method, earlier.url)
  probe.headers.host = API_HOST
  probe.headers.authorization = earlier.authorization
  probe.expectRefused = 'replay'
  return probe
}

function demoProbe (g: Gen, world: World, label: string): Probe {
  const path = g.pick(['/demo', '/demo/start', '/demo/callback', '/demo/callback'])
  const state = g.pick(['s1', 'ü', 'é', 'e', 'x'.repeat(5000), ''])
  const query = path === '/demo/callback'
    ? joinPairs(fuzzPairs(g, { code: g.pick([...world.codes, 'abc', '']), state, ...(g.chance(0.2) && { error: '96012', error_description: 'denied' }) }))
    : g.chance(0.2) ? joinPairs(fuzzPairs(g, { a: 'b' })) : ''
  const probe = probeOf(g, label, g.chance(0.9) ? 'GET' : 'HEAD', withQuery(path, query))
  // The state cookie: the same, another, or one of the same length in characters but not in bytes.
  if (g.chance(0.5)) probe.headers.cookie = `macgate_demo_state=${g.pick([enc(state), enc(state), 'other', 'e', '%C3%A9', 's%C3%BC'])}`
  return probe
}

function randomPath (g: Gen): string {
  let path = g.pick(BASE_PATHS)
  const extra = g.int(4)
  for (let i = 0; i < extra; i++) path += `${g.pick(['/', '/', '//', ''])}${g.pick(SEGMENTS)}`
  if (g.chance(0.1)) path = path.replace(/o/, '%6F')
  if (g.chance(0.05)) path = path.toUpperCase()
  if (g.chance(0.05)) path += '#fragment'
  return path
}

function pathProbe (g: Gen, world: World, label: string): Probe {
  const path = randomPath(g)
  const query = g.chance(0.3) ? joinPairs(fuzzPairs(g, { a: 'b', token: world.main.accessToken })).slice(0, UPSTREAM_QUERY_LIMIT) : ''
  const probe = probeOf(g, label, g.pick(INJECT_METHODS), withQuery(path, query))
  if (probe.url.startsWith('/echo/') && g.chance(0.6)) {
    // Signed correctly for the odd path, so that it gets past the MAC check to the proxy.
    const nonce = nonceFor(g)
    probe.headers.host = API_HOST
    probe.headers.authorization = defaultAuthorization({ token: world.main.accessToken, nonce, mac: macOf(world.main, probe.method, probe.url, nonce) })
  }
  if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(probe.method) && g.chance(0.5)) fuzzBody(g, probe, 'a=1&b=%FF')
  return probe
}

/** A browser's request: a preflight or a call with an Origin, to the open API, the token endpoint or anywhere. */
function corsProbe (g: Gen, world: World, label: string): Probe {
  // Now and then a browser's own preflight to the token endpoint from the public client's origin:
  // among the random ones it is too rare for a default-sized run to reach past the CORS checks.
  if (g.chance(0.15)) {
    const probe = probeOf(g, label, 'OPTIONS', '/oauth2/token')
    probe.headers.origin = SPA_ORIGIN
    probe.headers['access-control-request-method'] = 'POST'
    if (g.chance(0.5)) probe.headers['access-control-request-headers'] = g.pick(REQUEST_HEADERS)
    return probe
  }
  const target = g.chance(0.6) ? g.pick(API_TARGETS)[1] : g.chance(0.5) ? g.pick(['/oauth2/token', '/oauth2/revoke', '/oauth2/introspect']) : randomPath(g)
  const preflight = g.chance(0.7)
  const probe = probeOf(g, label, preflight ? 'OPTIONS' : g.pick(['GET', 'POST', 'OPTIONS', 'PUT']), withQuery(target, g.chance(0.2) ? apiQuery(g, world) : ''))
  probe.headers.host = API_HOST
  if (g.chance(0.95)) probe.headers.origin = g.pick(ORIGINS)
  if (preflight) {
    if (g.chance(0.9)) probe.headers['access-control-request-method'] = g.pick(REQUEST_METHODS)
    if (g.chance(0.6)) probe.headers['access-control-request-headers'] = g.pick(REQUEST_HEADERS)
    // Browsers send none, but a preflight must spend nothing even when it carries a signature.
    if (g.chance(0.1)) {
      const nonce = nonceFor(g)
      probe.headers.authorization = defaultAuthorization({ token: world.main.accessToken, nonce, mac: macOf(world.main, 'OPTIONS', probe.url, nonce) })
    }
  } else if (g.chance(0.5) && target.startsWith('/user/')) {
    const nonce = nonceFor(g)
    probe.headers.authorization = defaultAuthorization({ token: world.main.accessToken, nonce, mac: macOf(world.main, probe.method, probe.url, nonce) })
  } else if (target === '/oauth2/token' && probe.method === 'POST') {
    fuzzBody(g, probe, joinPairs(fuzzPairs(g, { grant_type: 'authorization_code', client_id: world.spa, redirect_uri: `${SPA_ORIGIN}/callback`, code: g.pick(world.codes), code_verifier: 'a'.repeat(43) })))
  }
  return probe
}

function healthProbe (g: Gen, _world: World, label: string): Probe {
  return probeOf(g, label, g.pick(['GET', 'GET', 'HEAD', 'POST']), withQuery('/healthz', g.chance(0.3) ? joinPairs(fuzzPairs(g, { a: 'b' })) : ''))
}

const FAMILIES: Array<[string, number, (g: Gen, world: World, label: string) => Probe]> = [
  ['authorize', 14, authorizeProbe], ['signin', 8, signInProbe], ['signout', 3, signOutProbe], ['token', 16, tokenProbe],
  ['mac', 22, macProbe], ['valid', 12, validProbe], ['replay', 3, replayProbe], ['demo', 5, demoProbe], ['path', 14, pathProbe], ['health', 2, healthProbe],
  ['cors', 8, corsProbe]
]
const TOTAL_WEIGHT = FAMILIES.reduce((sum, [, weight]) => sum + weight, 0)

/** Noise any request may carry: another method, huge, many or odd headers, hop-by-hop headers, spoofed identity. */
function addNoise (g: Gen, probe: Probe, family: string): void {
  if (family !== 'valid' && family !== 'replay' && g.chance(0.06)) probe.method = g.pick(INJECT_METHODS)
  const headers = probe.headers
  // At most one big one, so that a signed request still fits the upstream's header limit.
  const big = g.next()
  if (big < 0.05) headers[g.pick(['x-pad', 'user-agent', 'cookie', 'referer'])] = LONG.slice(0, 7 * 1024)
  else if (big < 0.08) for (let n = 0, many = 100 + g.int(200); n < many; n++) headers[`x-h-${n}`] = String(n)
  if (g.chance(0.06)) headers[g.pick(ODD_HEADER_NAMES)] = g.pick(HEADER_VALUES)
  if (g.chance(0.1)) Object.assign(headers, g.pick(HOP_BY_HOP))
  if (g.chance(0.05)) Object.assign(headers, g.pick(SPOOFS))
  if (g.chance(0.05)) headers.origin = g.pick(ORIGINS)
  if (g.chance(0.03)) headers.cookie = g.pick(['macgate_session=garbage', 'macgate_session=', ...(big < 0.08 ? [] : [`macgate_session=${'A'.repeat(3000)}`]), '=;;;=', `${headers.cookie ?? ''}; macgate_session=x`])
  if (g.chance(0.02) && probe.payload === undefined) probe.payload = 'a=1'
}

function nextProbe (g: Gen, world: World, index: number, phase: string): Probe {
  let roll = g.int(TOTAL_WEIGHT)
  const [family, , make] = FAMILIES.find(([, weight]) => (roll -= weight) < 0)!
  const probe = make(g, world, `${phase}#${index} ${family}`)
  addNoise(g, probe, family)
  // The gateway may refuse to proxy a protocol upgrade (400 96002): no longer must be served.
  if (probe.headers.upgrade !== undefined) delete probe.expectServed
  return probe
}

// ---- judging answers --------------------------------------------------------------------------

interface Answer { status: number, headers: Record<string, unknown>, body: string }

// The RFC endpoints (contract §10): plain JSON, RFC 6749 string codes.
const STANDARD_ROUTES = new Set(['POST /oauth2/revoke', 'POST /oauth2/introspect', 'GET /.well-known/oauth-authorization-server', 'HEAD /.well-known/oauth-authorization-server',
  // The RFC 6749 token endpoint: POST, and its 405 for the methods the router knows.
  ...['POST', 'GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'].map((method) => `${method} /oauth2/rfc/token`)])

const PAGE_ROUTES = new Set(['GET /', 'HEAD /', 'GET /oauth2/authorize', 'POST /oauth2/authorize', 'GET /oauth2/signin', 'HEAD /oauth2/signin', 'POST /oauth2/signin', 'POST /oauth2/signout',
  'GET /demo', 'HEAD /demo', 'GET /demo/start', 'HEAD /demo/start', 'GET /demo/callback', 'HEAD /demo/callback'])

// A failure takes the form of the path's callers: the token endpoint's body under its path (any
// method), a page under /oauth2/ and /demo, else the open API's JSON.
function strictKind (method: string, path: string): Kind {
  if (PAGE_ROUTES.has(`${method} ${path}`)) return 'page'
  if (STANDARD_ROUTES.has(`${method} ${path}`)) return 'standard'
  if (path === '/oauth2/token') return 'token'
  if (path === '/healthz' && (method === 'GET' || method === 'HEAD')) return 'health'
  if ((path === '/favicon.ico' || path === '/favicon.svg') && (method === 'GET' || method === 'HEAD')) return 'icon'
  if (path.startsWith('/oauth2/') || path === '/demo' || path.startsWith('/demo/')) return 'page'
  return 'api'
}

/** Which kind of answer a request must get; a path the router may decode into an endpoint's may get either. */
function kindOf (method: string, url: string): Kind {
  const path = url.split('?')[0]!.split('#')[0]!
  if (!path.startsWith('/')) return 'any' // `*`, absolute-form: whatever the router makes of it
  const kind = strictKind(method, path)
  if (kind !== 'api') return kind
  const decoded = decodedOr(path, path)
  return decoded !== path && strictKind(method, decoded) !== 'api' ? 'any' : 'api'
}

function jsonOf (body: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(body) as unknown
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

function pageProblem (method: string, answer: Answer): string | undefined {
  const { status, headers, body } = answer
  if (headers['x-frame-options'] !== 'DENY' || headers['cache-control'] !== 'no-store') return 'page without no-store / DENY'
  if (status >= 300 && status < 400) {
    const location = String(headers.location ?? '')
    if (!location.startsWith('/oauth2/') && !location.startsWith(`${REGISTERED_ORIGIN}/`)) return `redirect to ${JSON.stringify(location.slice(0, 80))}`
    return undefined
  }
  if (!/^text\/html/.test(String(headers['content-type']))) return `page answered ${String(headers['content-type'])}`
  if (method === 'HEAD' ? body !== '' : !body.startsWith('<!doctype html>')) return 'not an HTML page'
  if (status === 503 && !body.includes('id="error-code">96000<') && method !== 'HEAD') return '503 page without 96000'
  return undefined
}

const SUCCESS_FIELDS = ['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type', 'mac_key', 'mac_algorithm', 'openId']

function tokenProblem (method: string, answer: Answer): string | undefined {
  const { status, headers, body } = answer
  if (headers['content-type'] !== 'application/json;charset=UTF-8' || headers['cache-control'] !== 'no-store') return `token answer headers ${String(headers['content-type'])}`
  if (method === 'HEAD') return body === '' && status === 405 ? undefined : `HEAD token answer ${status}`
  if (!body.startsWith(PREFIX)) return `token answer without ${PREFIX}`
  const json = jsonOf(body.slice(PREFIX.length))
  if (json === undefined) return 'token answer not JSON'
  if (status === 200) return SUCCESS_FIELDS.every((name) => name in json) && typeof json.expires_in === 'number' ? undefined : 'token success without its eight fields'
  const error = json.error
  if (typeof error !== 'number' || !Number.isInteger(error) || error < 96000 || error > 96013 || typeof json.error_description !== 'string') return `token error ${String(error)}`
  if (status === 503 && error !== 96000) return `503 with error ${error}`
  return undefined
}

function apiProblem (method: string, answer: Answer): string | undefined {
  const { status, headers, body } = answer
  if (method === 'HEAD' && body === '') return undefined
  if (!/^application\/json/.test(String(headers['content-type']))) return `open API answered ${String(headers['content-type'])}`
  const json = jsonOf(body)
  if (json === undefined || typeof json.result !== 'string' || typeof json.description !== 'string' || typeof json.code !== 'number') return 'not {result,description,code}'
  if (status >= 400 && json.result !== 'error') return `${status} with result ${String(json.result)}`
  if (status === 401 && headers['www-authenticate'] !== 'MAC') return '401 without WWW-Authenticate: MAC'
  if (status === 503 && json.code !== 96000) return `503 with code ${String(json.code)}`
  if (status === 429 && (json.code !== 96014 || headers['retry-after'] === undefined || headers.ratelimit === undefined)) return '429 without 96014, Retry-After and RateLimit'
  return undefined
}

function iconProblem (_method: string, answer: Answer): string | undefined {
  return answer.status === 200 && answer.headers['content-type'] === 'image/svg+xml' ? undefined : `icon ${answer.status}`
}

function healthProblem (method: string, answer: Answer): string | undefined {
  if (answer.status !== 200) return `healthz ${answer.status}`
  return method === 'HEAD' || jsonOf(answer.body)?.status === 'ok' ? undefined : 'healthz body'
}

const RFC_ERRORS = new Set(['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope', 'temporarily_unavailable', 'server_error'])

function standardProblem (method: string, answer: Answer): string | undefined {
  const { status, headers, body } = answer
  if (!/^application\/json/.test(String(headers['content-type'])) || headers['cache-control'] !== 'no-store') return `standard answer headers ${String(headers['content-type'])}`
  if (method === 'HEAD') return body === '' ? undefined : 'HEAD with a body'
  const json = jsonOf(body)
  if (json === undefined) return 'standard answer not a JSON object'
  if (status === 200) return typeof json.error === 'undefined' ? undefined : '200 with an error'
  if (typeof json.error !== 'string' || !RFC_ERRORS.has(json.error) || typeof json.error_description !== 'string') return `standard error ${String(json.error)}`
  if (status === 503 && json.error !== 'temporarily_unavailable') return `503 with error ${json.error}`
  return undefined
}

const SHAPES: Record<Exclude<Kind, 'any'>, (method: string, answer: Answer) => string | undefined> = { page: pageProblem, token: tokenProblem, api: apiProblem, health: healthProblem, standard: standardProblem, icon: iconProblem }

/** What the upstream of a served /echo request saw: only the gateway's identity, no token. */
function upstreamProblem (probe: Probe, answer: Answer): string | undefined {
  const data = jsonOf(answer.body)?.data as { headers?: Record<string, string>, url?: string } | undefined
  if (data?.headers === undefined) return undefined
  const seen = Object.entries(data.headers)
  if (seen.some(([name]) => name === 'authorization')) return 'the Authorization header went upstream'
  const identity = seen.filter(([name]) => name.replaceAll('_', '-').startsWith('x-macgate-'))
  const names = identity.map(([name]) => name).sort().join(',')
  if (names !== 'x-macgate-client-id,x-macgate-open-id,x-macgate-scope,x-macgate-user-id') return `upstream saw identity headers ${names}`
  if (data.headers['x-macgate-open-id'] !== probe.openId) return `upstream saw open id ${data.headers['x-macgate-open-id']}`
  const query = String(data.url ?? '').split('?')[1] ?? ''
  if (query.split('&').some((pair) => decodedOr(pair.split('=')[0]!.replaceAll('+', ' '), '') === 'token')) return 'a token parameter went upstream'
  return undefined
}

/** The body's own words for grouping failures: its code or message, without the echoed URL. */
function gist (body: string): string {
  const json = jsonOf(body.startsWith(PREFIX) ? body.slice(PREFIX.length) : body)
  return String(json?.code ?? json?.error ?? json?.message ?? body.slice(0, 40)).replace(/:\/.*/, '')
}

/**
 * Contract §11: CORS only for the Origin sent and only for a registered one (never `*`); the token
 * endpoint's only for a public client's; a verified open API answer only for the token's client's;
 * 204 only for a preflight, empty.
 */
function corsProblem (probe: Probe, answer: Answer, kind: Kind): string | undefined {
  const allowed = answer.headers['access-control-allow-origin']
  const origin = probe.headers.origin
  if (answer.status === 204) {
    if (probe.method !== 'OPTIONS' || origin === undefined || probe.headers['access-control-request-method'] === undefined) return '204 for what is not a preflight'
    if (answer.body !== '') return 'a preflight answer with a body'
  }
  if (allowed === undefined) {
    if (answer.headers['access-control-allow-methods'] !== undefined || answer.headers['access-control-allow-headers'] !== undefined) return 'Access-Control-Allow-* without an allowed origin'
    return undefined
  }
  if (allowed !== origin) return `Access-Control-Allow-Origin ${String(allowed).slice(0, 40)} for Origin ${String(origin).slice(0, 40)}`
  if (origin !== REGISTERED_ORIGIN && origin !== SPA_ORIGIN) return `CORS for an unregistered origin ${origin.slice(0, 40)}`
  if (!/\bOrigin\b/.test(String(answer.headers.vary))) return 'CORS without Vary: Origin'
  if (kind === 'token' && origin !== SPA_ORIGIN) return 'token endpoint CORS for a confidential client\'s origin'
  if (kind === 'api' && answer.status === 200 && origin !== REGISTERED_ORIGIN) return 'a verified answer readable from another client\'s origin'
  const allowedHeaders = String(answer.headers['access-control-allow-headers'] ?? '')
  if (/x-macgate|x_macgate|connection|upgrade|forwarded|method-override|(^|, )te(,|$)/i.test(allowedHeaders)) return `a preflight allowed ${allowedHeaders.slice(0, 80)}`
  return undefined
}

/** What is wrong with one answer, or undefined. */
function judge (probe: Probe, answer: Answer, outage: boolean): Problem | undefined {
  const kind = kindOf(probe.method, probe.url)
  const say = (category: string, problem: string): Problem =>
    [category, `${answer.status} ${problem.replace(/\d+ (ms|chars)/, '')} ${gist(answer.body)}`, `${probe.label}: ${probe.method} ${probe.url.slice(0, 120)} → ${answer.status} ${problem}: ${answer.body.slice(0, 160)}`]
  if (answer.status === 0) return say('5xx', 'no answer')
  if (answer.status >= 500 || answer.status < 200) {
    if (answer.status !== 503) return say('5xx', `status ${answer.status}`)
    if (!outage) return say('5xx', '503 without an outage')
  }
  const cors = corsProblem(probe, answer, kind)
  if (cors !== undefined) return say('cors', cors)
  if (answer.status === 204) return undefined // a preflight's answer, judged just now
  const problem = kind === 'any'
    ? (Object.values(SHAPES).every((shape) => shape(probe.method, answer) !== undefined) ? 'no endpoint\'s shape' : undefined)
    : SHAPES[kind](probe.method, answer)
  if (problem !== undefined) return say(kind, problem)
  // What the MAC check answered on a limited route (not the route check's 400/404/405 before it).
  if (kind === 'api' && limitedPath(probe.url) && [200, 401, 403, 429].includes(answer.status) && answer.headers['ratelimit-policy'] === undefined) return say('quota', 'a limited route\'s answer without RateLimit-Policy')
  if (probe.expectRefused !== undefined && answer.status === 200) return say(probe.expectRefused, 'a request the contract refuses was served')
  if (probe.expectServed === true && !outage) {
    if (answer.status !== 200) return say('valid', 'a correctly signed request was refused')
    const leak = upstreamProblem(probe, answer)
    if (leak !== undefined) return say('upstream', leak)
  }
  return undefined
}

/** Which kind of answer this is, for the check that the fuzz reached past the first checks. */
function reachedOf (kind: Kind, answer: Answer): string | undefined {
  const { status, body } = answer
  if (status === 204 && answer.headers['access-control-allow-origin'] !== undefined) return kind === 'token' ? 'token preflight allowed' : 'preflight allowed'
  if (kind === 'token') return status === 200 ? 'token success' : status === 400 || status === 401 ? 'token error' : undefined
  if (kind === 'page') {
    if (String(answer.headers.location ?? '').startsWith(`${REDIRECT_URI}?`)) return 'redirect to the client'
    if (status === 200 && body.includes('name="decision"')) return 'consent page'
    return status === 400 && body.includes('id="error-code"') ? 'error page' : undefined
  }
  if (kind === 'api') return status === 200 ? 'api served' : status === 401 ? 'api refused' : status === 429 ? 'api over quota' : undefined
  return undefined
}
const REACHED = ['token success', 'token error', 'redirect to the client', 'consent page', 'error page', 'api served', 'api refused', 'api over quota', 'preflight allowed', 'token preflight allowed']

/** A failure: its category, a key naming the kind of problem (for grouping), and the request and answer. */
type Problem = [category: string, key: string, detail: string]

/** Failures per category, grouped by kind of problem, and a histogram of statuses. */
class Tally {
  readonly problems = new Map<string, Map<string, { count: number, example: string }>>()
  readonly statuses = new Map<number, number>()
  readonly reached = new Map<string, number>()
  count = 0
  served = 0

  add (status: number, problem: Problem | undefined, reached?: string): void {
    this.count++
    totals.requests++
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1)
    if (reached !== undefined) this.reached.set(reached, (this.reached.get(reached) ?? 0) + 1)
    if (problem === undefined) return
    const [category, key, detail] = problem
    const kinds = this.problems.get(category) ?? new Map<string, { count: number, example: string }>()
    const seen = kinds.get(key) ?? { count: 0, example: detail }
    seen.count++
    kinds.set(key, seen)
    this.problems.set(category, kinds)
  }

  report (t: Test, what: string): void {
    t.comment(`${what}: ${this.count} requests, statuses ${JSON.stringify(Object.fromEntries([...this.statuses].sort(([a], [b]) => a - b)))}`)
    const listed = (category: string): string[] => [...this.problems.get(category)?.values() ?? []].map(({ count, example }) => `${count}x ${example}`)
    // FUZZ_REPORT=<file> writes one example of every kind of failure, not only the first eight.
    if (process.env.FUZZ_REPORT !== undefined) appendFileSync(process.env.FUZZ_REPORT, JSON.stringify({ what, problems: Object.fromEntries([...this.problems.keys()].map((category) => [category, listed(category)])) }, null, 1) + '\n')
    const categories = ['5xx', 'page', 'token', 'api', 'health', 'standard', 'icon', 'any', 'valid', 'replay', 'binding', 'upstream', 'cors', 'raw', 'hang']
    for (const category of categories) {
      const found = listed(category)
      const total = found.reduce((sum, line) => sum + parseInt(line, 10), 0)
      t.same(found.slice(0, 8), [], `${what}: ${describe(category)} (${total} failures of ${found.length} kinds)`)
    }
  }
}

function describe (category: string): string {
  return {
    '5xx': 'every request answered, no 5xx (503 only during the outage)',
    page: 'pages answer HTML pages or redirects into the flow',
    token: 'the token endpoint answers &&&START&&& JSON',
    api: 'the open API answers {result,description,code}',
    health: '/healthz answers ok',
    standard: 'the RFC endpoints answer plain JSON with RFC 6749 errors',
    icon: '/favicon.ico and /favicon.svg answer the SVG icon',
    any: 'paths decoded into an endpoint answer some endpoint\'s shape',
    valid: 'correctly signed requests are served',
    replay: 'replayed nonces are refused',
    binding: 'a token or clientId parameter that does not match is refused, however encoded',
    upstream: 'the upstream sees the gateway\'s identity only',
    cors: 'CORS only for the Origin sent, when registered, by contract §11; 204 only for preflights',
    raw: 'raw socket answers are Node\'s 4xx, a closed connection, or well-formed',
    hang: 'no raw request hangs'
  }[category] ?? category
}

/** An inject that fails to produce an answer comes back as status 0 with the error, judged as no answer. */
async function sendInject (app: FastifyInstance, probe: Probe): Promise<Answer> {
  const options = { method: probe.method, url: probe.url, headers: probe.headers, remoteAddress: probe.remoteAddress, ...(probe.payload !== undefined && { payload: probe.payload }) } as InjectOptions
  try {
    const response = await app.inject(options)
    return { status: response.statusCode, headers: response.headers, body: response.body }
  } catch (error) {
    return { status: 0, headers: {}, body: `inject failed: ${String(error)}` }
  }
}

/** `count` inject probes from `g`, `BATCH` at a time. */
async function injectPhase (app: FastifyInstance, g: Gen, world: () => World, count: number, phase: string, tally: Tally, outage: () => boolean): Promise<void> {
  for (let start = 0; start < count; start += BATCH) {
    const probes: Probe[] = []
    for (let i = start; i < Math.min(start + BATCH, count); i++) probes.push(nextProbe(g, world(), i, phase))
    const answers = await Promise.all(probes.map(async (probe) => await sendInject(app, probe)))
    probes.forEach((probe, i) => {
      const answer = answers[i]!
      tally.add(answer.status, judge(probe, answer, outage()), reachedOf(kindOf(probe.method, probe.url), answer))
      if (probe.expectServed === true && answer.status === 200) {
        tally.served++
        if (world().sent.length < 200) world().sent.push({ method: probe.method, url: probe.url, authorization: probe.headers.authorization! })
      }
    })
  }
}

// ---- raw sockets ------------------------------------------------------------------------------

interface RawProbe {
  label: string
  /** Latin-1: each character one byte. */
  bytes: string
  /** Ends the sending side after writing (for requests the server would otherwise wait on). */
  halfClose?: boolean
}

interface RawAnswer { status: number | undefined, headers: Record<string, string>, body: string, timedOut: boolean }

/** Fastify's answers to what Node's parser refuses (fastify.js defaultClientErrorHandler). */
const CLIENT_ERROR_BODIES = new Set([
  '{"error":"Bad Request","message":"Client Error","statusCode":400}',
  '{"error":"Request Timeout","message":"Client Timeout","statusCode":408}',
  '{"error":"Request Header Fields Too Large","message":"Exceeded maximum allowed HTTP header size","statusCode":431}'
])

const utf8 = (text: string): string => Buffer.from(text, 'utf8').toString('latin1')

function rawSigned (world: World, g: Gen, method: string, url: string, extra = ''): string {
  const nonce = nonceFor(g)
  // Node reads the request line as Latin-1: sign the URL as the gateway will see it.
  const authorization = defaultAuthorization({ token: world.main.accessToken, nonce, mac: macOf(world.main, method, url, nonce) })
  return `${method} ${url} HTTP/1.1\r\nHost: ${API_HOST}\r\nAuthorization: ${authorization}\r\n${extra}Connection: close\r\n\r\n`
}

function rawProbe (g: Gen, world: World, index: number, phase: string): RawProbe {
  const label = `${phase}#${index}`
  const simple = (method: string, url: string, headers = 'Host: gateway.test\r\n', body = ''): RawProbe =>
    ({ label, bytes: `${method} ${url} HTTP/1.1\r\n${headers}Connection: close\r\n${body === '' ? '' : `Content-Length: ${body.length}\r\n`}\r\n${body}` })
  const path = asSent(g.pick(BASE_PATHS))
  const form = `grant_type=authorization_code&client_id=${world.spare.clientId}&client_secret=${world.spare.clientSecret}&redirect_uri=${enc(REDIRECT_URI)}&code=x`
  const kinds: Array<() => RawProbe> = [
    // Odd methods, some Node's parser knows and some it refuses.
    () => simple(g.pick(['PROPFIND', 'MKCOL', 'TRACE', 'PURGE', 'SEARCH', 'M-SEARCH', 'QUERY', 'FOO', 'get', 'G3T', 'PRI', 'CONNECT', 'UNLOCK', 'SOURCE']), path),
    // Malformed request lines.
    () => ({
      label,
      bytes: g.pick([`GET ${path} HTTP/1.2\r\nHost: x\r\n\r\n`, `GET ${path} HTTP/2.0\r\nHost: x\r\n\r\n`, `GET ${path} HTTP/0.9\r\n\r\n`, `GET  ${path}  HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET ${path}\tHTTP/1.1\r\nHost: x\r\n\r\n`, `GET ${path}\r\n\r\n`, `GET http://evil.example${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 'GET * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', `GET ${path}?x=\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 'GET /a b HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n',
      `GET ${path} HTTP/1.0\r\n\r\n`, `\r\n\r\nGET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, `GET ${path} HTTP/1.1\nHost: x\nConnection: close\n\n`, `GET ${path} http/1.1\r\nHost: x\r\n\r\n`])
    }),
    // Raw paths inject cannot send: dot segments, doubled slashes, bytes that are not UTF-8.
    () => simple(g.pick(['GET', 'POST', 'HEAD']), g.pick(['/../../etc/passwd', '//oauth2//token', '/oauth2/../oauth2/token', '/oauth2/./authorize?client_id=1', '/echo/%2e%2e/user/profile', '/oauth2/authorize#frag',
      '/\xff\xfe', `/oauth2/authorize?state=${utf8('ü')}\xff`, '/oauth2/token?grant_type=\xc3\x28', '/demo/..', '/%2e%2e/%2e%2e/', '/healthz/..', '//', '/.', '/\\oauth2\\token', '/oauth2/token\\..', '/oauth2/signin/../signin', `/${'a/'.repeat(3000)}`])),
    // Broken header syntax.
    () => ({
      label,
      bytes: `GET ${path} HTTP/1.1\r\nHost: x\r\n${g.pick(['Host : y\r\n', 'X-A\r\n', 'X-A: b\r\n c\r\n', 'X-A: b\rc\r\n', 'X-A: \x00\r\n', 'X A: b\r\n', 'X-\xfc: b\r\n', ': b\r\n',
      'Host: y\r\n', 'Content-Length: 1\r\nContent-Length: 2\r\n', 'Content-Length: -1\r\n', 'Content-Length: 1e3\r\n', 'Content-Length: 0x10\r\n', 'Transfer-Encoding: chunked\r\nContent-Length: 3\r\n',
      'Transfer-Encoding: chunked, gzip\r\n', 'Transfer-Encoding: gzip\r\n', 'X-A: b\r\n\r\n\r\n'])}Connection: close\r\n\r\n`
    }),
    // Header bytes that are not UTF-8, and odd names Node accepts.
    () => simple(g.pick(['GET', 'POST']), g.pick(['/oauth2/authorize?client_id=1', '/oauth2/signin', '/oauth2/token', '/user/profile', '/demo/callback?state=a']),
      `Host: gateway.test\r\n${g.pick(['Cookie: macgate_session=\xff\xfe; macgate_demo_state=\xc3\x28', 'Authorization: MAC access_token="\xff", nonce="1:1", mac="\xc3\x28"', 'Authorization: Basic \xff\xfe',
        'X-Macgate-Open-Id: \xc3\x28', 'User-Agent: \x80\x81\xfe', 'Content-Type: application/x-www-form-urlencoded; charset=\xff', '__proto__: x', 'constructor: x', 'X_Macgate_User_Id: root'])}\r\n`, g.chance(0.5) ? 'a=\xff' : ''),
    // Huge and many headers: under Node's 16 KiB the app answers; over it, 431.
    () => simple('GET', g.pick(['/oauth2/signin', '/user/profile', '/oauth2/token', '/healthz']),
      `Host: gateway.test\r\n${g.pick([`X-Pad: ${LONG.slice(0, 7 * 1024)}\r\n`, Array.from({ length: 300 }, (_, n) => `X-H-${n}: ${n}\r\n`).join(''), `X-Pad: ${LONG.slice(0, 17 * 1024)}\r\n`, `Cookie: ${LONG.slice(0, 7000)}\r\n`])}`),
    () => simple('GET', `/oauth2/token?${LONG.slice(0, g.pick([8 * 1024, 17 * 1024]))}`),
    // Signed requests with raw paths and headers: past the MAC check to the proxy.
    () => {
      const url = g.pick(['/echo/../user/profile', '/echo/./a', '/echo/%2e%2e/a', '/echo//a', '/echo/%FF', '/echo/%C3%28', '/echo/a%00b', '/echo/%zz', `/echo/${utf8('ü')}`, '/echo/\xff', '/user/profile/', '/echo/a?%FF=1',
        `/echo/a?token=${world.main.accessToken}`, '/user/profile', '/echo/a?a=1&a=2'])
      const extra = g.pick(['', 'Expect: 100-continue\r\n', 'Upgrade: websocket\r\nConnection: Upgrade\r\n', 'TE: trailers\r\n', 'Authorization: MAC garbage\r\n', 'X-Macgate-Open-Id: evil\r\nX_Macgate_Scope: 1000\r\n',
        'Connection: keep-alive\r\nKeep-Alive: timeout=1\r\n', 'Trailer: Expires\r\n'])
      return { label, bytes: rawSigned(world, g, 'GET', url, extra) }
    },
    () => {
      const url = g.pick(['/echo/post', '/echo/post?x=1'])
      const nonce = nonceFor(g)
      const authorization = defaultAuthorization({ token: world.main.accessToken, nonce, mac: macOf(world.main, 'POST', url, nonce) })
      const body = g.pick(['5\r\nhello\r\n0\r\n\r\n', '5\r\nhello\r\n0\r\nX-Trailer: x\r\n\r\n', 'zz\r\nhello\r\n0\r\n\r\n', '5;ext=1\r\nhello\r\n0\r\n\r\n'])
      return { label, bytes: `POST ${url} HTTP/1.1\r\nHost: ${API_HOST}\r\nAuthorization: ${authorization}\r\nContent-Type: text/plain\r\n${g.pick(['', 'Expect: 100-continue\r\n'])}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body}` }
    },
    // Form bodies chunked, promised but not sent, or after an Expect.
    () => ({ label, bytes: `POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${FORM}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${form.length.toString(16)}\r\n${form}\r\n0\r\n\r\n` }),
    () => ({ label, halfClose: true, bytes: `POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${FORM}\r\nContent-Length: 100\r\n\r\n${form.slice(0, 10)}` }),
    () => ({ label, bytes: `POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${FORM}\r\nExpect: ${g.pick(['100-continue', 'garbage', '200-ok'])}\r\nContent-Length: ${form.length}\r\nConnection: close\r\n\r\n${form}` }),
    // Two requests in one write: the second well-formed or garbage.
    () => ({ label, bytes: `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n${g.pick(['GET /oauth2/token HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'garbage\r\n\r\n', 'GET /\xff HTTP/1.1\r\n\r\n'])}` })
  ]
  return g.pick(kinds)()
}

/** A complete response in `data` (after any 100 Continue), or undefined while more may come. */
function parseRaw (data: Buffer, head: boolean, closed: boolean): Omit<RawAnswer, 'timedOut'> | undefined {
  let offset = 0
  for (;;) {
    const end = data.indexOf('\r\n\r\n', offset)
    if (end === -1) return closed ? { status: undefined, headers: {}, body: '' } : undefined
    const lines = data.subarray(offset, end).toString('latin1').split('\r\n')
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!)?.[1])
    const headers: Record<string, string> = {}
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
    }
    if (status === 100) { offset = end + 4; continue }
    const rest = data.subarray(end + 4)
    if (head || status === 204 || status === 304) return { status, headers, body: '' }
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length'])
      if (rest.length < length) return closed ? { status, headers, body: rest.toString('utf8') } : undefined
      return { status, headers, body: rest.subarray(0, length).toString('utf8') }
    }
    if (headers['transfer-encoding'] === 'chunked') {
      const text = rest.toString('latin1')
      if (!text.includes('0\r\n\r\n') && !closed) return undefined
      return { status, headers, body: Buffer.from(dechunk(text).body, 'latin1').toString('utf8') }
    }
    return closed ? { status, headers, body: rest.toString('utf8') } : undefined
  }
}

async function rawExchange (port: number, probe: RawProbe): Promise<RawAnswer> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let data = Buffer.alloc(0)
    let settled = false
    const head = requestLine(probe)[0] === 'HEAD'
    const finish = (answer: Omit<RawAnswer, 'timedOut'> | undefined, timedOut: boolean): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve({ ...(answer ?? { status: undefined, headers: {}, body: '' }), timedOut })
    }
    const timer = setTimeout(() => finish(parseRaw(data, head, true), true), RAW_TIMEOUT_MS)
    socket.on('connect', () => {
      socket.write(Buffer.from(probe.bytes, 'latin1'))
      if (probe.halfClose === true) socket.end()
    })
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      const answer = parseRaw(data, head, false)
      if (answer !== undefined) finish(answer, false)
    })
    socket.on('close', () => finish(parseRaw(data, head, true), false))
    socket.on('error', () => {})
  })
}

/** The method and target of the first request in `bytes`, as the app would see them. */
function requestLine (probe: RawProbe): [string, string] {
  const [method = '', target = ''] = probe.bytes.slice(0, probe.bytes.search(/\r?\n/)).split(/[ \t]+/)
  return [method, target]
}

function judgeRaw (probe: RawProbe, raw: RawAnswer, outage: boolean): Problem | undefined {
  const shown = `${probe.label}: ${JSON.stringify(probe.bytes.slice(0, 140))}`
  if (raw.timedOut) return ['hang', JSON.stringify(probe.bytes.slice(0, 40)), `${shown} → no answer and no close in ${RAW_TIMEOUT_MS} ms`]
  if (raw.status === undefined) return undefined // closed without an answer
  if (Number.isNaN(raw.status)) return ['raw', 'not HTTP/1.x', `${shown} → not an HTTP/1.x answer`]
  // Node's parser refused it: Fastify's clientError handler writes its answer without a Date header.
  if (raw.status >= 400 && raw.status < 500 && raw.headers.date === undefined && (raw.body === '' || CLIENT_ERROR_BODIES.has(raw.body))) return undefined
  // Node's own answers (417 to an Expect it does not know).
  if (raw.status >= 400 && raw.status < 500 && raw.body === '' && raw.headers['content-type'] === undefined) return undefined
  const [method, url] = requestLine(probe)
  const problem = judge({ label: probe.label, method, url, headers: {}, remoteAddress: '' }, { status: raw.status, headers: raw.headers, body: raw.body }, outage)
  return problem === undefined ? undefined : [problem[0] === '5xx' ? '5xx' : 'raw', problem[1], `${problem[2]} (raw ${JSON.stringify(probe.bytes.slice(0, 140))})`]
}

async function rawPhase (port: number, g: Gen, world: World, count: number, phase: string, tally: Tally, outage: () => boolean): Promise<void> {
  for (let start = 0; start < count; start += RAW_BATCH) {
    const probes: RawProbe[] = []
    for (let i = start; i < Math.min(start + RAW_BATCH, count); i++) probes.push(rawProbe(g, world, i, phase))
    const answers = await Promise.all(probes.map(async (probe) => await rawExchange(port, probe)))
    probes.forEach((probe, i) => tally.add(answers[i]!.status ?? 0, judgeRaw(probe, answers[i]!, outage())))
  }
}

// ---- the end: still serving, nothing stray ------------------------------------------------------

async function stillServes (t: Test, app: FastifyInstance, world: World): Promise<void> {
  const answer = await signedInject(app, { url: '/user/profile', token: world.main.accessToken, macKey: world.main.macKey })
  t.equal(answer.statusCode, 200, `a known-good signed request is still served: ${answer.body.slice(0, 120)}`)
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'healthz still answers')
}

async function eventually (check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    if (await check().catch(() => false)) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return false
}

t.test(`fuzz seed 0x${SEED.toString(16)}: ${INJECT_COUNT} inject and ${RAW_COUNT} raw requests on a real Redis`, async (t) => {
  const started = Date.now()
  const redis = await startRedis(t)
  const { app, port } = await fuzzGateway(t, redis)
  const world = await provision(app)
  const g = generator(SEED)
  const tally = new Tally()
  const never = () => false
  await injectPhase(app, g, () => world, INJECT_COUNT / 2, 'inject', tally, never)
  await rawPhase(port, g, world, RAW_COUNT, 'raw', tally, never)
  await injectPhase(app, g, () => world, INJECT_COUNT / 2, 'inject2', tally, never)
  t.comment(`${tally.count} requests in ${Date.now() - started} ms (${tally.served} correctly signed ones served)`)
  t.ok(tally.count >= INJECT_COUNT + RAW_COUNT, `${tally.count} requests sent`)
  t.ok(tally.served >= INJECT_COUNT / 20, 'the fuzz reached the upstream through valid signatures')
  t.comment(`answers reached: ${JSON.stringify(Object.fromEntries(tally.reached))}`)
  t.same(REACHED.filter((kind) => (tally.reached.get(kind) ?? 0) < 3), [], 'the fuzz reached past the first checks of every endpoint')
  tally.report(t, 'fuzz')
  await stillServes(t, app, world)
  strays.check(t)
})

t.test(`fuzz seed 0x${OUTAGE_SEED.toString(16)} through a Redis outage`, own, async (t) => {
  const started = Date.now()
  const redis = await startRedis(t)
  const { app, store, port } = await fuzzGateway(t, redis)
  let world = await provision(app)
  const g = generator(OUTAGE_SEED)
  const tally = new Tally()
  let outage = false
  const during = () => outage
  await injectPhase(app, g, () => world, 300, 'before', tally, during)

  outage = true
  await redis.stop()
  await injectPhase(app, g, () => world, 400, 'outage', tally, during)
  await rawPhase(port, g, world, 50, 'outage-raw', tally, during)
  const refused = tally.statuses.get(503) ?? 0
  await redis.start()
  // Redis came back empty: the window ends once the store answers again; then new credentials.
  t.ok(await eventually(async () => { await store.getClient('1'); return true }, 10_000), 'the store answers again after the restart')
  outage = false
  world = await provision(app)

  await injectPhase(app, g, () => world, 1000, 'after', tally, during)
  await rawPhase(port, g, world, 50, 'after-raw', tally, during)
  t.comment(`${tally.count} requests in ${Date.now() - started} ms, ${refused} answered 503 during the outage`)
  t.ok(refused > 0, 'the outage was seen')
  tally.report(t, 'outage fuzz')
  await stillServes(t, app, world)
  strays.check(t)
})

t.test('nothing was left to reject after the gateways closed', async (t) => {
  await new Promise((resolve) => setTimeout(resolve, 300))
  strays.check(t)
  t.comment(`the file sent ${totals.requests} requests in ${Date.now() - totals.started} ms`)
})
