import { readFile } from 'node:fs/promises'
import { compileValidator, defaultScopes, SchemaError, settingsSchema, type MacgateSettings } from '../plugin/index.js'

export interface RouteRule {
  /** An exact path, or a prefix ending in `/*`. */
  path: string
  methods: string[]
  scopes: string[]
  match: 'all' | 'any'
  /** Verified requests allowed per client and minute, over every instance (README, "Quotas"). */
  quota?: { perMinute: number }
}

type Resolved<T> = { [K in keyof T]-?: Exclude<T[K], undefined> }

/**
 * The gateway's config file: where to proxy and which routes, beside the plugin's own settings
 * under their own names (passed to the plugin unchanged, validated by the plugin's schema).
 */
export type GatewayConfig = {
  /** Where verified requests go; without it, the sample open API runs in process. */
  upstream?: string
  routes: RouteRule[]
  /** Forward X-HTTP-Method-Override and its kin upstream (default false: they are stripped). */
  forwardMethodOverride: boolean
} & Resolved<Omit<MacgateSettings, 'scopes' | 'tokenErrorStatus' | 'tokenCache'>> & Pick<MacgateSettings, 'scopes' | 'tokenErrorStatus'> & {
  tokenCache: Resolved<NonNullable<MacgateSettings['tokenCache']>>
}

/** Routes of the sample open API (contract section 8). */
export const sampleRoutes: RouteRule[] = [
  { path: '/user/profile', methods: ['GET'], scopes: ['1'], match: 'all' },
  { path: '/user/openidV2', methods: ['GET'], scopes: ['3'], match: 'all' },
  { path: '/user/phoneAndEmail', methods: ['GET'], scopes: ['4', '6'], match: 'any' }
]

const schema = {
  ...settingsSchema,
  properties: {
    upstream: { type: 'string', pattern: '^https?://' },
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
    ...settingsSchema.properties
  }
}

const validate = compileValidator<GatewayConfig>(schema, 'config')

function isHttpUrl (value: string): boolean {
  if (!URL.canParse(value)) return false
  const { protocol, hostname } = new URL(value)
  return (protocol === 'http:' || protocol === 'https:') && hostname !== ''
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
  if (typeof config.upstream === 'string' && !isHttpUrl(config.upstream)) {
    throw new ConfigError(`invalid config: config.upstream${fromEnv ? ' (from MACGATE_UPSTREAM)' : ''} must be an absolute http or https URL`)
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
  return parseConfig(json, env)
}
