// `macgate load`: signed load against a deployment, each request with a fresh nonce and signature
// from the client library, or code exchanges and refreshes against its token endpoint.
import { connect } from 'node:net'
import { checkPath, LoadFileError, readCredentials, readGrants, readPaths, type GrantType, type WeightedPath } from '../load/files.ts'
import { buildReport, progressLine, table, writeReport, type LoadReport, type ReportSettings } from '../load/report.ts'
import { roundRobin, signedRequests, weighted, zipf, type Credentials } from '../load/requests.ts'
import { runLoad, type LoadProgress, type SetupRequest } from '../load/run.ts'
import { OperatorError, parseCommand, UsageError } from './usage.ts'

const OPTIONS = {
  url: { type: 'string' },
  method: { type: 'string' },
  path: { type: 'string', multiple: true },
  paths: { type: 'string' },
  connections: { type: 'string' },
  duration: { type: 'string' },
  amount: { type: 'string' },
  rate: { type: 'string' },
  credentials: { type: 'string' },
  'access-token': { type: 'string' },
  'mac-key': { type: 'string' },
  'mac-algorithm': { type: 'string' },
  distribution: { type: 'string' },
  json: { type: 'boolean' },
  out: { type: 'string' },
  'token-endpoint': { type: 'string' },
  'grant-type': { type: 'string' },
  'client-id': { type: 'string' },
  'client-secret': { type: 'string' },
  'redirect-uri': { type: 'string' }
} as const

type Values = Partial<Record<keyof typeof OPTIONS, string | string[] | boolean>>

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']
const DEFAULT_CONNECTIONS = 50
const DEFAULT_SECONDS = 30
/** Without a terminal, a progress line this often (s): a CI log, not a flood. */
const PLAIN_PROGRESS_SECONDS = 5
const CONNECT_TIMEOUT_MS = 5000

/** Everything a run needs, checked before the first request goes out. */
interface Plan {
  origin: string
  settings: ReportSettings
  setupRequest: SetupRequest
  firstPath: string
  seconds: number
  amount?: number
  rate?: number
  connections: number
  readErrorCodes: 'non-2xx' | 'all'
  /** How many requests each token signed, for the report's `tokens.used`. */
  signedBy?: Uint32Array
  json: boolean
  out?: string
}

const text = (value: Values[keyof Values]): string | undefined => typeof value === 'string' ? value : undefined

function positiveInteger (name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const number = Number(value)
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(number) || number < 1) throw new UsageError(`--${name} must be a whole number of at least 1, not ${value}`)
  return number
}

const UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 }

/** `30s`, `2m`, `1h`, `500ms`, or a bare number of seconds. */
function durationSeconds (value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(value)
  const seconds = match === null ? Number.NaN : Number(match[1]) * UNITS[match[2] ?? 's']!
  if (!(seconds > 0)) throw new UsageError(`--duration must be a time such as 30s, 2m or 500ms, not ${value}`)
  return seconds
}

/** The target's origin, refused with credentials in it: they would end up in logs and reports. */
function targetOf (value: string | undefined): URL {
  if (value === undefined) throw new UsageError('load needs --url, the deployment to load (e.g. --url https://api.example.com)')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new UsageError(`--url must be an absolute http or https URL, not ${value}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--url must be an http or https URL, not ${url.protocol}`)
  if (url.username !== '' || url.password !== '') {
    throw new UsageError('--url must not carry credentials (user:password@): give the token with MACGATE_ACCESS_TOKEN and MACGATE_MAC_KEY, or --credentials FILE')
  }
  if (url.hash !== '') throw new UsageError('--url must not have a #fragment')
  return url
}

/** --path and --paths FILE together, else the URL's own path and query. */
async function pathsOf (values: Values, url: URL, fallback: string): Promise<WeightedPath[]> {
  const given = (values.path as string[] | undefined) ?? []
  for (const path of given) {
    const problem = checkPath(path)
    if (problem !== undefined) throw new UsageError(`--path ${problem}, not ${path}`)
  }
  const fromFile = text(values.paths) === undefined ? [] : await readPaths(text(values.paths)!)
  const paths = [...given.map((path) => ({ path, weight: 1 })), ...fromFile]
  if (paths.length > 0) return paths
  return [{ path: url.pathname === '/' && url.search === '' ? fallback : `${url.pathname}${url.search}`, weight: 1 }]
}

/** One token from flags or the environment (which keeps the key out of the shell history), or a file of them. */
async function credentialsOf (values: Values, env: NodeJS.ProcessEnv): Promise<Credentials[]> {
  const accessToken = text(values['access-token']) ?? env.MACGATE_ACCESS_TOKEN
  const macKey = text(values['mac-key']) ?? env.MACGATE_MAC_KEY
  const file = text(values.credentials)
  const macAlgorithm = text(values['mac-algorithm'])
  if (macAlgorithm !== undefined && macAlgorithm !== 'HmacSha1' && macAlgorithm !== 'HmacSha256') throw new UsageError(`--mac-algorithm must be HmacSha1 or HmacSha256, not ${macAlgorithm}`)
  if (file !== undefined) {
    if (text(values['access-token']) !== undefined || text(values['mac-key']) !== undefined) throw new UsageError('give --credentials FILE or one token (--access-token, --mac-key), not both')
    return await readCredentials(file)
  }
  if (accessToken === undefined && macKey === undefined) {
    throw new UsageError('load needs credentials: MACGATE_ACCESS_TOKEN and MACGATE_MAC_KEY in the environment, --credentials FILE (JSON lines or CSV of access_token,mac_key), or --access-token and --mac-key')
  }
  if (accessToken === undefined || accessToken === '') throw new UsageError('load has a mac_key but no access token: set MACGATE_ACCESS_TOKEN or --access-token')
  if (macKey === undefined || macKey === '') throw new UsageError('load has an access token but no mac_key: set MACGATE_MAC_KEY or --mac-key')
  return [{ accessToken, macKey, ...(macAlgorithm !== undefined && { macAlgorithm }) }]
}

/** Signed API calls: each request a path of the mix and a token of the population, in turn or by Zipf. */
async function apiPlan (values: Values, env: NodeJS.ProcessEnv, url: URL, method: string): Promise<Pick<Plan, 'settings' | 'setupRequest' | 'firstPath' | 'signedBy' | 'readErrorCodes'>> {
  for (const name of ['grant-type', 'client-id', 'client-secret', 'redirect-uri'] as const) {
    if (values[name] !== undefined) throw new UsageError(`--${name} belongs to --token-endpoint FILE`)
  }
  const distribution = text(values.distribution) ?? 'round-robin'
  if (distribution !== 'round-robin' && distribution !== 'zipf') throw new UsageError(`--distribution must be round-robin or zipf, not ${distribution}`)
  const paths = await pathsOf(values, url, '/')
  const credentials = await credentialsOf(values, env)
  const signedBy = new Uint32Array(credentials.length)
  const pickPath = paths.length === 1 ? () => 0 : weighted(paths.map(({ weight }) => weight))
  return {
    settings: { url: url.origin, mode: 'api', method, paths, connections: 0, tokens: { count: credentials.length, used: 0, distribution } },
    setupRequest: signedRequests({
      origin: url.origin,
      method,
      path: () => paths[pickPath()]!.path,
      credentials,
      pick: distribution === 'zipf' ? zipf(credentials.length) : roundRobin(credentials.length),
      onSigned: (index) => { signedBy[index]!++ }
    }),
    firstPath: paths[0]!.path,
    signedBy,
    readErrorCodes: 'non-2xx'
  }
}

/**
 * Token endpoint requests, one grant of the file each (codes are single-use): client_id and
 * client_secret in the form (POST) or the query (GET), as the contract's clients send them.
 */
async function tokenEndpointPlan (values: Values, env: NodeJS.ProcessEnv, url: URL, method: string, file: string): Promise<Pick<Plan, 'settings' | 'setupRequest' | 'firstPath' | 'readErrorCodes'> & { grants: number }> {
  if (method !== 'GET' && method !== 'POST') throw new UsageError(`--token-endpoint sends GET or POST, not ${method}`)
  for (const name of ['credentials', 'access-token', 'mac-key', 'mac-algorithm', 'distribution', 'paths'] as const) {
    if (values[name] !== undefined) throw new UsageError(`--${name} does not go with --token-endpoint, which spends codes or refresh tokens`)
  }
  if (values.duration !== undefined) throw new UsageError('--token-endpoint runs until its grants are spent: leave out --duration (--amount N spends only the first N)')
  const grantType = text(values['grant-type']) ?? 'authorization_code'
  if (grantType !== 'authorization_code' && grantType !== 'refresh_token') throw new UsageError(`--grant-type must be authorization_code or refresh_token, not ${grantType}`)
  const clientId = text(values['client-id'])
  if (clientId === undefined) throw new UsageError('--token-endpoint needs --client-id')
  const clientSecret = text(values['client-secret']) ?? env.MACGATE_CLIENT_SECRET
  if (clientSecret === undefined || clientSecret === '') throw new UsageError('--token-endpoint needs the client secret: MACGATE_CLIENT_SECRET in the environment, or --client-secret')
  const redirectUri = text(values['redirect-uri'])
  if (grantType === 'authorization_code' && redirectUri === undefined) throw new UsageError('--token-endpoint with codes needs --redirect-uri, the one the codes were issued for')
  const paths = await pathsOf(values, url, '/oauth2/token')
  if (paths.length > 1) throw new UsageError('--token-endpoint takes one --path')
  const path = paths[0]!.path
  const grants = await readGrants(file, grantType as GrantType)
  const base = { grant_type: grantType, client_id: clientId, client_secret: clientSecret, ...(grantType === 'authorization_code' && { redirect_uri: redirectUri! }) }
  let next = 0
  const setupRequest: SetupRequest = (request) => {
    // Past the last grant (a request resent after a timeout), the first again: refused as spent.
    const form = new URLSearchParams({ ...base, ...grants[next++ % grants.length] }).toString()
    request.method = method as 'GET' | 'POST'
    if (method === 'GET') {
      request.path = `${path}${path.includes('?') ? '&' : '?'}${form}`
    } else {
      request.path = path
      request.headers = { ...request.headers, 'content-type': 'application/x-www-form-urlencoded' }
      request.body = form
    }
    return request
  }
  return {
    settings: { url: url.origin, mode: 'token-endpoint', method, paths: [{ path, weight: 1 }], connections: 0, grantType },
    setupRequest,
    firstPath: path,
    // A deployment with tokenErrorStatus 200 answers its errors with 200: read every body.
    readErrorCodes: 'all',
    grants: grants.length
  }
}

/**
 * The command line into a plan, in the order a person fixes it: the target (no credentials in the
 * URL), the numbers, then what each request carries (tokens or grants, read from their files with
 * the line of any fault). Every refusal is a named error before anything is sent.
 */
async function planOf (values: Values, env: NodeJS.ProcessEnv): Promise<Plan> {
  const url = targetOf(text(values.url))
  const method = (text(values.method) ?? (values['token-endpoint'] === undefined ? 'GET' : 'POST')).toUpperCase()
  if (!METHODS.includes(method)) throw new UsageError(`--method must be one of ${METHODS.join(', ')}, not ${method}`)
  const connections = positiveInteger('connections', text(values.connections)) ?? DEFAULT_CONNECTIONS
  let amount = positiveInteger('amount', text(values.amount))
  const rate = positiveInteger('rate', text(values.rate))
  const duration = durationSeconds(text(values.duration))
  if (duration !== undefined && amount !== undefined) throw new UsageError('give --duration or --amount, not both')
  const file = text(values['token-endpoint'])
  let mode
  if (file === undefined) {
    mode = await apiPlan(values, env, url, method)
  } else {
    const planned = await tokenEndpointPlan(values, env, url, method, file)
    if (amount !== undefined && amount > planned.grants) throw new UsageError(`--amount ${amount} is more than the ${planned.grants} grants in ${file}: each is spent once`)
    amount ??= planned.grants
    mode = planned
  }
  const seconds = duration ?? DEFAULT_SECONDS
  return {
    origin: url.origin,
    ...mode,
    settings: { ...mode.settings, connections, ...(amount === undefined ? { duration: seconds } : { amount }), ...(rate !== undefined && { rate }) },
    seconds,
    ...(amount !== undefined && { amount }),
    ...(rate !== undefined && { rate }),
    connections,
    json: values.json === true,
    ...(text(values.out) !== undefined && { out: text(values.out)! })
  }
}

/** A TCP connection to the target, so that a wrong URL fails in a line instead of a run of errors. */
async function checkReachable (origin: string): Promise<void> {
  const url = new URL(origin)
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  const port = Number(url.port !== '' ? url.port : url.protocol === 'https:' ? 443 : 80)
  await new Promise<void>((resolve, reject) => {
    const socket = connect({ host, port })
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy(Object.assign(new Error('no answer'), { code: 'ETIMEDOUT' })))
    socket.once('connect', () => { socket.destroy(); resolve() })
    socket.once('error', (error: NodeJS.ErrnoException) => reject(new OperatorError(`cannot reach ${origin}: ${error.code ?? error.message}`)))
  })
}

/** Somewhere the command writes: process.stdout or process.stderr, or a test's own. */
export interface Output {
  write: (text: string) => unknown
  isTTY?: boolean
}

/** The report goes to stdout; the progress and the paths of --out's files to stderr. */
export interface LoadOutputs {
  stdout: Output
  stderr: Output
}

/** On a terminal one line redrawn each second; otherwise a plain line every few seconds. */
export function progressWriter (stream: Output): { update: (progress: LoadProgress) => void, end: () => void } {
  if (stream.isTTY) {
    return {
      update: (progress) => { stream.write(`\r\x1b[2K${progressLine(progress)}`) },
      end: () => { stream.write('\r\x1b[2K') }
    }
  }
  let written = 0
  return {
    update: (progress) => {
      if (progress.seconds - written < PLAIN_PROGRESS_SECONDS) return
      written = progress.seconds
      stream.write(`macgate load: ${progressLine(progress)}\n`)
    },
    end: () => {}
  }
}

/**
 * The plan first, so that every mistake is refused before anything is sent; then one TCP connection
 * to the target, so that a wrong URL is one line rather than a run of connection errors; then the
 * run, and its report (table or --json on stdout, the files of --out).
 */
export async function loadCommand (args: string[], env: NodeJS.ProcessEnv = process.env, { stdout, stderr }: LoadOutputs = process): Promise<void> {
  const { values } = parseCommand('load', { args, options: OPTIONS }, {
    '--token': 'give the token with MACGATE_ACCESS_TOKEN and MACGATE_MAC_KEY (kept out of the shell history), or --access-token and --mac-key'
  })
  let plan: Plan
  try {
    plan = await planOf(values, env)
  } catch (error) {
    throw error instanceof LoadFileError ? new OperatorError(error.message) : error
  }
  await checkReachable(plan.origin)

  const progress = progressWriter(stderr)
  // Ctrl-C ends the run and still reports what ran; a second one ends the process.
  const stop = new AbortController()
  const interrupt = (): void => stop.abort()
  process.once('SIGINT', interrupt)
  const started = new Date()
  let result
  try {
    result = await runLoad({
      url: plan.origin + plan.firstPath,
      seconds: plan.seconds,
      connections: plan.connections,
      ...(plan.amount !== undefined && { amount: plan.amount }),
      ...(plan.rate !== undefined && { rate: plan.rate }),
      setupRequest: plan.setupRequest,
      readErrorCodes: plan.readErrorCodes,
      onSecond: progress.update,
      signal: stop.signal
    })
  } finally {
    progress.end()
    process.removeListener('SIGINT', interrupt)
  }
  const settings = plan.signedBy === undefined || plan.settings.tokens === undefined
    ? plan.settings
    : { ...plan.settings, tokens: { ...plan.settings.tokens, used: plan.signedBy.filter((signed) => signed > 0).length } }
  const report: LoadReport = buildReport(settings, result, started)
  if (plan.out !== undefined) {
    const written = await writeReport(report, plan.out).catch((error: NodeJS.ErrnoException) => {
      throw new OperatorError(`cannot write the report to ${plan.out!}: ${error.code ?? error.message}`)
    })
    stderr.write(`macgate load: report ${written.json}, chart ${written.svg}\n`)
  }
  stdout.write(plan.json ? `${JSON.stringify(report)}\n` : table(report))
}
