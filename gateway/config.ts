import { readFile } from 'node:fs/promises'
import { Ajv } from 'ajv'
import type { ScopeDefinition } from '../plugin/oauth/scope.js'

export interface RouteRule {
  /** An exact path, or a prefix ending in `/*`. */
  path: string
  methods: string[]
  scopes: string[]
  match: 'all' | 'any'
}

export interface GatewayConfig {
  /** Where verified requests go; without it, the sample open API runs in process. */
  upstream?: string
  routes: RouteRule[]
  nonceSkewMinutes: number
  tokenCache: { max: number, maxAgeMs: number, negativeTtlMs: number }
  strictRedirectUri: boolean
  tokenErrorStatus?: 200
  codeTtl: number
  accessTokenTtl: number
  refreshTokenTtl: number
  signInRateLimit: number
  secureCookies: boolean
  /** The permission registry; default the public Xiaomi list. */
  scopes?: ScopeDefinition[]
}

/** Routes of the sample open API (contract section 8). */
export const sampleRoutes: RouteRule[] = [
  { path: '/user/profile', methods: ['GET'], scopes: ['1'], match: 'all' },
  { path: '/user/openidV2', methods: ['GET'], scopes: ['3'], match: 'all' },
  { path: '/user/phoneAndEmail', methods: ['GET'], scopes: ['4', '6'], match: 'any' }
]

const seconds = { type: 'integer', minimum: 1 }
const schema = {
  type: 'object',
  additionalProperties: false,
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
          match: { enum: ['all', 'any'], default: 'all' }
        }
      }
    },
    nonceSkewMinutes: { type: 'integer', minimum: 1, maximum: 60, default: 5 },
    tokenCache: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        max: { type: 'integer', minimum: 0, default: 100_000 },
        maxAgeMs: { type: 'integer', minimum: 1, default: 300_000 },
        negativeTtlMs: { type: 'integer', minimum: 1, default: 10_000 }
      }
    },
    strictRedirectUri: { type: 'boolean', default: false },
    tokenErrorStatus: { const: 200 },
    codeTtl: { ...seconds, maximum: 600, default: 300 },
    accessTokenTtl: { ...seconds, default: 7_776_000 },
    refreshTokenTtl: { ...seconds, default: 315_360_000 },
    signInRateLimit: { type: 'integer', minimum: 1, default: 10 },
    secureCookies: { type: 'boolean', default: false },
    scopes: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'description'],
        properties: { id: { type: 'string', pattern: '^[0-9]+$' }, description: { type: 'string', minLength: 1 } }
      }
    }
  }
}

const validate = new Ajv({ useDefaults: true, allErrors: true }).compile<GatewayConfig>(schema)

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

/** Validates a config object, filling in defaults; the error names each bad field. */
export function parseConfig (input: unknown, env: NodeJS.ProcessEnv = {}): GatewayConfig {
  const config = structuredClone(input ?? {}) as Record<string, unknown>
  if (env.MACGATE_UPSTREAM !== undefined && env.MACGATE_UPSTREAM !== '') config.upstream = env.MACGATE_UPSTREAM
  if (!validate(config)) {
    const problems = (validate.errors ?? []).map((error) => {
      const field = `config${error.instancePath.replaceAll('/', '.').replace(/\.(\d+)/g, '[$1]')}`
      const extra = error.keyword === 'additionalProperties' ? ` (${String(error.params.additionalProperty)})` : ''
      return `${field} ${error.message ?? 'is invalid'}${extra}`
    })
    throw new ConfigError(`invalid config: ${problems.join('; ')}`)
  }
  if (typeof config.upstream === 'string' && !isHttpUrl(config.upstream)) {
    throw new ConfigError('invalid config: config.upstream must be an absolute http or https URL')
  }
  const routes = (config.routes as RouteRule[] | undefined) ?? (config.upstream === undefined ? sampleRoutes : [])
  if (routes.length === 0) throw new ConfigError('invalid config: config.routes must list at least one route (required with config.upstream)')
  return { ...config, routes } as GatewayConfig
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
