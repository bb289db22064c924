// Judging the fuzz's answers: what each endpoint's answer must look like, and the tally of failures
// per category that a run reports.
import { decodedOr, PREFIX, REGISTERED_ORIGIN } from './fuzz-pools.ts'
import { appendFileSync } from 'node:fs'
import { type Test } from 'tap'
import { REDIRECT_URI, SPA_ORIGIN } from './app.ts'
import { limitedPath } from './fuzz-world.ts'
import { type Kind, type Probe } from './fuzz-probes.ts'

/** What the file sent, all phases together. */
export const totals = { requests: 0, started: Date.now() }

export interface Answer { status: number, headers: Record<string, unknown>, body: string }

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
export function kindOf (method: string, url: string): Kind {
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
export function judge (probe: Probe, answer: Answer, outage: boolean): Problem | undefined {
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
export function reachedOf (kind: Kind, answer: Answer): string | undefined {
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
export const REACHED = ['token success', 'token error', 'redirect to the client', 'consent page', 'error page', 'api served', 'api refused', 'api over quota', 'preflight allowed', 'token preflight allowed']

/** A failure: its category, a key naming the kind of problem (for grouping), and the request and answer. */
export type Problem = [category: string, key: string, detail: string]

/** Failures per category, grouped by kind of problem, and a histogram of statuses. */
export class Tally {
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
