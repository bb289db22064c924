import { readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { trustedProxies } from '../edge/trusted-proxies.ts'
import { compileValidator, defaultScopes, SchemaError, settingsSchema, type MacgateSettings } from '../../plugin/index.ts'
import { edgeSchemaProperties, edgeSettings, resolveTlsPaths, type EdgeSettings } from './edge-settings.ts'

export interface RouteRule {
  /** An exact path, or a prefix ending in `/*`. */
  path: string
  methods: string[]
  scopes: string[]
  match: 'all' | 'any'
  /** This route's service (one URL, or several instances balanced); default the top-level one. */
  upstream?: string | string[]
  /** This route's upstream timeouts; each one left out is the gateway-wide one. */
  timeouts?: Partial<UpstreamTimeouts>
  /** Verified requests allowed per client and minute, over every instance (README, "Quotas"). */
  quota?: { perMinute: number }
}

/** How long the gateway waits on an upstream, in milliseconds. */
export interface UpstreamTimeouts {
  /** To open a connection (TCP, and TLS for https). */
  connectMs: number
  /** From the request sent to the response's headers: past it, 504. */
  headersMs: number
  /** Between two chunks of the response body: past it, the response is cut. */
  bodyIdleMs: number
}

/** Each upstream's connection pool and passive health check. */
export interface UpstreamPoolSettings {
  /** Connections to each instance. */
  connections: number
  /** Requests waiting for an upstream (each instance's connections included) beyond which 503 at once. */
  maxWaiting: number
  /** Connection failures or timeouts in a row after which an instance is skipped... */
  ejectAfterFailures: number
  /** ...for this long, then tried again. */
  ejectMs: number
}

/** The gateway's own server towards its callers (Node's http.Server settings), in milliseconds. */
export interface ClientTimeouts {
  /** A connection must send a request's complete headers within this (checked every `checkIntervalMs`). */
  headersMs: number
  /** A request, body included, must have arrived within this (0: no limit). */
  requestMs: number
  /** An idle keep-alive connection is closed after this. */
  keepAliveMs: number
  /** How often the two above are checked. */
  checkIntervalMs: number
}

export interface TracingSettings {
  /** Every caller's traceparent parents the request's span (default false: only a trusted proxy's does; others' are links). */
  acceptIncomingContext: boolean
}

type Resolved<T> = { [K in keyof T]-?: Exclude<T[K], undefined> }

/**
 * The gateway's config file: where to proxy and which routes, beside the plugin's own settings
 * under their own names (passed to the plugin unchanged, validated by the plugin's schema).
 */
export type GatewayConfig = {
  /** Where verified requests go (one URL or several instances); without it, the sample open API runs in process. */
  upstream?: string | string[]
  routes: RouteRule[]
  /** Forward X-HTTP-Method-Override and its kin upstream (default false: they are stripped). */
  forwardMethodOverride: boolean
  timeouts: UpstreamTimeouts
  upstreamPool: UpstreamPoolSettings
  clientTimeouts: ClientTimeouts
  /** The proxies in front (addresses and CIDR ranges): their X-Forwarded-* headers are believed (README, "Running at the edge"). */
  trustProxy?: string[]
  /** On SIGTERM, ms the listener keeps serving after /health/ready turned 503 (a load balancer's deregistration time). */
  drainDelayMs: number
  /** Then, ms in-flight requests have to finish before their connections are cut. */
  drainMs: number
  /** Traces (README "Traces"); whether tracing is on is the environment's OTEL_* variables' to say. */
  tracing: TracingSettings
} & EdgeSettings & Resolved<Omit<MacgateSettings, 'scopes' | 'tokenErrorStatus' | 'tokenCache'>> & Pick<MacgateSettings, 'scopes' | 'tokenErrorStatus'> & {
  tokenCache: Resolved<NonNullable<MacgateSettings['tokenCache']>>
}

/** Routes of the sample open API (contract section 8). */
export const sampleRoutes: RouteRule[] = [
  { path: '/user/profile', methods: ['GET'], scopes: ['1'], match: 'all' },
  { path: '/user/openidV2', methods: ['GET'], scopes: ['3'], match: 'all' },
  { path: '/user/phoneAndEmail', methods: ['GET'], scopes: ['4', '6'], match: 'any' }
]

/** One URL, or several (instances of one service): checked by badUpstream, whose sentences fit either form. */
const upstreamSchema = {}
const MAX_INSTANCES = 64

const MS = { type: 'integer', minimum: 1, maximum: 3_600_000 }
const timeoutProperties = { connectMs: MS, headersMs: MS, bodyIdleMs: MS }

const schema = {
  ...settingsSchema,
  properties: {
    upstream: upstreamSchema,
    routes: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['path'],
        properties: {
          path: { type: 'string', pattern: '^/[^?#]*$' },
          methods: { type: 'array', minItems: 1, items: { enum: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] }, default: ['GET'] },
          scopes: { type: 'array', items: { type: 'string', pattern: '^[0-9]+$' }, default: [] },
          match: { enum: ['all', 'any'], default: 'all' },
          upstream: upstreamSchema,
          timeouts: { type: 'object', additionalProperties: false, properties: timeoutProperties },
          quota: {
            type: 'object',
            additionalProperties: false,
            required: ['perMinute'],
            properties: { perMinute: { type: 'integer', minimum: 0, maximum: 1_000_000_000 } }
          }
        }
      }
    },
    forwardMethodOverride: { type: 'boolean', default: false },
    timeouts: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        connectMs: { ...MS, default: 5000 },
        headersMs: { ...MS, default: 30_000 },
        bodyIdleMs: { ...MS, default: 30_000 }
      }
    },
    upstreamPool: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        connections: { type: 'integer', minimum: 1, maximum: 4096, default: 128 },
        maxWaiting: { type: 'integer', minimum: 0, maximum: 100_000, default: 1024 },
        ejectAfterFailures: { type: 'integer', minimum: 1, maximum: 1000, default: 3 },
        ejectMs: { ...MS, default: 10_000 }
      }
    },
    clientTimeouts: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        headersMs: { ...MS, default: 15_000 },
        requestMs: { type: 'integer', minimum: 0, maximum: 3_600_000, default: 300_000 },
        keepAliveMs: { ...MS, default: 72_000 },
        checkIntervalMs: { type: 'integer', minimum: 100, maximum: 60_000, default: 5000 }
      }
    },
    ...edgeSchemaProperties,
    trustProxy: { type: 'array', minItems: 1, maxItems: 256, items: { type: 'string', minLength: 1, maxLength: 64 } },
    drainDelayMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 0 },
    drainMs: { type: 'integer', minimum: 0, maximum: 3_600_000, default: 30_000 },
    tracing: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: { acceptIncomingContext: { type: 'boolean', default: false } }
    },
    ...settingsSchema.properties
  }
}

const validate = compileValidator<GatewayConfig>(schema, 'config')

function isHttpUrl (value: string): boolean {
  if (!URL.canParse(value)) return false
  const { protocol, hostname } = new URL(value)
  return (protocol === 'http:' || protocol === 'https:') && hostname !== ''
}

/** What is wrong with one upstream URL, or undefined. */
function badUrl (url: unknown, field: string, from: string): string | undefined {
  if (typeof url !== 'string') return `${field} must be a URL`
  if (!/^https?:\/\//.test(url)) return `${field} must match pattern "^https?://"`
  if (!isHttpUrl(url)) return `${field}${from} must be an absolute http or https URL`
  return undefined
}

/** What is wrong with an upstream (one URL, or an array of 1 to 64, each instance once). */
function badUpstream (upstream: unknown, field: string, from = ''): string[] {
  if (upstream === undefined) return []
  if (typeof upstream === 'string') return [badUrl(upstream, field, from)].filter((problem) => problem !== undefined)
  if (!Array.isArray(upstream)) return [`${field} must be a URL or an array of URLs`]
  if (upstream.length === 0 || upstream.length > MAX_INSTANCES) return [`${field} must list 1 to ${MAX_INSTANCES} URLs`]
  const problems = upstream.map((url, index) => badUrl(url, `${field}[${index}]`, from)).filter((problem) => problem !== undefined)
  if (problems.length === 0 && new Set(upstream.map((url: string) => new URL(url).origin)).size < upstream.length) return [`${field} names one instance twice`]
  return problems
}

/** Each entry of trustProxy that is neither an IP address nor a CIDR range (nor one of proxy-addr's names). */
function badProxies (entries: string[]): string[] {
  return entries.flatMap((entry, index) => {
    try {
      trustedProxies([entry])
      return []
    } catch {
      return [`config.trustProxy[${index}] must be an IP address or a CIDR range (IPv4 or IPv6), not ${JSON.stringify(entry)}`]
    }
  })
}

export class ConfigError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

/** A route table to copy, shown by the refusal of an upstream without routes. */
const ROUTES_EXAMPLE = '{"upstream": "http://127.0.0.1:9000", "routes": [{"path": "/api/*", "methods": ["GET", "POST"], "scopes": ["1"]}]}'

/**
 * Why an upstream needs routes, said where it is refused. An upstream without routes is refused
 * rather than given a default of every path and method to any valid token: the routes are where
 * the scopes are checked, and a default that skips them would hand every client that holds any
 * token (scope "1", profile, say) every endpoint of the API, silently. A careful operator expects
 * a gateway to proxy what it was told to and nothing else; the one line that proxies everything
 * is in the message, to be written on purpose.
 */
function missingRoutes (upstreamFrom: string | undefined): string {
  if (upstreamFrom === undefined) return 'invalid config: config.routes must list at least one route (leave it out for the sample open API\'s routes)'
  return `invalid config: config.routes must list at least one route with ${upstreamFrom}: which paths to proxy and the scopes each needs ` +
    '(nothing is proxied by default rather than every path to any valid token). ' +
    `Write them in a file and run \`macgate start --config gateway.json\`, e.g. ${ROUTES_EXAMPLE}; ` +
    'a route {"path": "/*", "methods": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]} proxies every path to any valid token'
}

/** Every route scope must be in the permission registry (config.scopes, else the default one), as the CLI's client scopes must. */
function unknownRouteScopes (routes: RouteRule[], registry: Array<{ id: string }>): string[] {
  const known = new Set(registry.map(({ id }) => id))
  return routes.flatMap((route, index) => route.scopes
    .filter((scope) => !known.has(scope))
    .map((scope) => `config.routes[${index}] (${route.path}) has scope ${scope}, which is not in the permission registry (known: ${[...known].join(', ')}; config.scopes defines the registry)`))
}

/**
 * Validates a config object, filling in defaults; the error names each bad field. In order: the
 * schema (every field's type, range and allowed values at once), the upstream's URL, then the
 * routes: present when there is an upstream, and asking only for scopes the registry knows.
 */
export function parseConfig (input: unknown, env: NodeJS.ProcessEnv = {}): GatewayConfig {
  const given = (input ?? {}) as Record<string, unknown>
  const fromEnv = env.MACGATE_UPSTREAM !== undefined && env.MACGATE_UPSTREAM !== ''
  const withEnv = fromEnv ? { ...given, upstream: env.MACGATE_UPSTREAM } : given
  let config: GatewayConfig
  try {
    config = validate(withEnv)
  } catch (error) {
    if (error instanceof SchemaError) throw new ConfigError(`invalid config: ${error.message}`)
    throw error
  }
  const badUrls = [
    ...badUpstream(config.upstream, 'config.upstream', fromEnv ? ' (from MACGATE_UPSTREAM)' : ''),
    ...(config.routes ?? []).flatMap((route, index) => badUpstream(route.upstream, `config.routes[${index}].upstream`))
  ]
  if (badUrls.length > 0) throw new ConfigError(`invalid config: ${badUrls.join('; ')}`)
  const edge = edgeSettings(config as unknown as Record<string, unknown>)
  if (edge.problems.length > 0) throw new ConfigError(`invalid config: ${edge.problems.join('; ')}`)
  delete config.tls
  Object.assign(config, edge.settings)
  if (config.trustProxy !== undefined) {
    const bad = badProxies(config.trustProxy)
    if (bad.length > 0) throw new ConfigError(`invalid config: ${bad.join('; ')}`)
    if (config.issuer === undefined) {
      throw new ConfigError('invalid config: config.trustProxy needs config.issuer: behind a proxy the public URL cannot be told from the address a request reached, so the metadata\'s issuer must be set')
    }
  }
  const { headersMs, requestMs } = config.clientTimeouts
  if (requestMs !== 0 && requestMs < headersMs) {
    throw new ConfigError('invalid config: config.clientTimeouts.requestMs must be 0 or at least config.clientTimeouts.headersMs (the headers are part of the request)')
  }
  const routes = (config.routes as RouteRule[] | undefined) ?? (config.upstream === undefined ? sampleRoutes : [])
  if (routes.length === 0) throw new ConfigError(missingRoutes(fromEnv ? 'MACGATE_UPSTREAM' : config.upstream === undefined ? undefined : 'config.upstream'))
  // The sample routes are the sample API's own; only routes the operator wrote are checked.
  const unknown = config.routes === undefined ? [] : unknownRouteScopes(routes, config.scopes ?? defaultScopes)
  if (unknown.length > 0) throw new ConfigError(`invalid config: ${unknown.join('; ')}`)
  return { ...config, routes }
}

export async function loadConfig (file: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  if (file === undefined) return parseConfig({}, env)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new ConfigError(`cannot read config file ${file}: ${(error as Error).message}`)
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new ConfigError(`config file ${file} is not JSON: ${(error as Error).message}`)
  }
  const config = parseConfig(json, env)
  // The TLS files are named relative to the config file, wherever macgate is started from.
  if (config.tls !== undefined) config.tls = resolveTlsPaths(config.tls, dirname(file))
  return config
}
