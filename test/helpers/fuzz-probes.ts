// The fuzz's inject probes (test/helpers/fuzz-world.ts gives the credentials): one family of
// requests per endpoint, weighted, with noise any request may carry.
import { CONTROLS, decodedOr, enc, FORM, type Gen } from './fuzz-pools.ts'
import { authorizeUrl, REDIRECT_URI, SPA_ORIGIN } from './app.ts'
import { API_HOST, defaultAuthorization, hmac, type LiveTokens, type SignedParts, signedString } from './gateway.ts'
import { type World } from './fuzz-world.ts'
import { BAD_ESCAPES, BASE_PATHS, CONTENT_TYPES, HEADER_VALUES, HOP_BY_HOP, INJECT_METHODS, LENGTHS, LONG, ODD_HEADER_NAMES, ODD_NAMES, ODD_VALUES, ORIGINS, REQUEST_HEADERS, REQUEST_METHODS, SEGMENTS, SPOOFS } from './fuzz-values.ts'

/** What an answer must be: a page, a token body, the open API's JSON, the health check, or any of them. */
export type Kind = 'page' | 'token' | 'api' | 'health' | 'standard' | 'icon' | 'any'

export interface Probe {
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
export function asSent (target: string): string {
  const url = target.replaceAll('\\', '%5C')
  const parsed = new URL(url.startsWith('//') ? `http://localhost${url}` : url, 'http://localhost')
  return parsed.pathname + parsed.search
}

export function nonceFor (g: Gen, offsetMinutes = 0): string {
  return `${g.int(2 ** 31) * 65536 + g.int(65536)}:${Math.floor(Date.now() / 60000) + offsetMinutes}`
}

export function macOf (tokens: LiveTokens, method: string, url: string, nonce: string, host = API_HOST): string {
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

export function nextProbe (g: Gen, world: World, index: number, phase: string): Probe {
  let roll = g.int(TOTAL_WEIGHT)
  const [family, , make] = FAMILIES.find(([, weight]) => (roll -= weight) < 0)!
  const probe = make(g, world, `${phase}#${index} ${family}`)
  addNoise(g, probe, family)
  // The gateway may refuse to proxy a protocol upgrade (400 96002): no longer must be served.
  if (probe.headers.upgrade !== undefined) delete probe.expectServed
  return probe
}
