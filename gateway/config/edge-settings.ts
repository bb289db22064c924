// The gateway config's edge settings: the TLS files, HTTP/2, Strict-Transport-Security. Checked by
// hand rather than by the JSON schema: each takes two forms (one pair or a list; false or an
// object), and a person reads one sentence naming the field better than ajv's anyOf of both.
import { isAbsolute, resolve } from 'node:path'

/** A certificate (PEM, the chain after it) and its private key (PEM), by file path. */
export interface TlsFiles {
  cert: string
  key: string
}

/** The public listener's HTTP/2 (offered beside HTTP/1.1 by ALPN), or false for HTTP/1.1 alone. */
export interface Http2Settings {
  /** Streams one connection may have open at once (the SETTINGS frame's SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number
}

/** The Strict-Transport-Security header sent over TLS, or false for none. */
export interface HstsSettings {
  maxAgeSeconds: number
  includeSubDomains: boolean
}

export interface EdgeSettings {
  /** Serve TLS with these pairs, chosen by SNI (the first is the default); absent: plain HTTP. */
  tls?: TlsFiles[]
  http2: Http2Settings | false
  hsts: HstsSettings | false
}

/** At most this many pairs: the SNI lookup walks them (each certificate's names) per handshake. */
export const MAX_TLS_PAIRS = 32
export const HTTP2_DEFAULTS: Http2Settings = { maxConcurrentStreams: 100 }
/** A year, the figure browsers' preload lists ask for; subdomains left alone unless the operator says so. */
export const HSTS_DEFAULTS: HstsSettings = { maxAgeSeconds: 31_536_000, includeSubDomains: false }

/** The three fields accept anything in the schema: `edgeSettings` checks them. */
export const edgeSchemaProperties = { tls: {}, http2: {}, hsts: {} }

function isObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function unknownFields (value: Record<string, unknown>, field: string, known: string[]): string[] {
  return Object.keys(value).filter((name) => !known.includes(name)).map((name) => `${field} has an unknown field ${name} (known: ${known.join(', ')})`)
}

function badPair (pair: unknown, field: string): string[] {
  if (!isObject(pair)) return [`${field} must be {"cert": FILE, "key": FILE}`]
  const problems = unknownFields(pair, field, ['cert', 'key'])
  for (const name of ['cert', 'key']) {
    if (typeof pair[name] !== 'string' || pair[name] === '') problems.push(`${field}.${name} must be a file path`)
  }
  return problems
}

function wholeNumber (value: unknown, min: number, max: number): boolean {
  return Number.isInteger(value) && (value as number) >= min && (value as number) <= max
}

/** One form of `tls` or its problems, each naming its field. */
function readTls (tls: unknown): { pairs?: TlsFiles[], problems: string[] } {
  if (tls === undefined) return { problems: [] }
  if (Array.isArray(tls)) {
    if (tls.length === 0 || tls.length > MAX_TLS_PAIRS) return { problems: [`config.tls must list 1 to ${MAX_TLS_PAIRS} pairs`] }
    const problems = tls.flatMap((pair, index) => badPair(pair, `config.tls[${index}]`))
    return problems.length > 0 ? { problems } : { pairs: tls as TlsFiles[], problems }
  }
  const problems = badPair(tls, 'config.tls')
  return problems.length > 0 ? { problems } : { pairs: [tls as TlsFiles], problems }
}

function readHttp2 (http2: unknown): { value: Http2Settings | false, problems: string[] } {
  if (http2 === undefined || http2 === true) return { value: { ...HTTP2_DEFAULTS }, problems: [] }
  if (http2 === false) return { value: false, problems: [] }
  if (!isObject(http2)) return { value: false, problems: ['config.http2 must be true, false or {"maxConcurrentStreams": N}'] }
  const problems = unknownFields(http2, 'config.http2', ['maxConcurrentStreams'])
  const value = { ...HTTP2_DEFAULTS, ...http2 } as Http2Settings
  if (!wholeNumber(value.maxConcurrentStreams, 1, 10_000)) problems.push('config.http2.maxConcurrentStreams must be a whole number from 1 to 10000')
  return { value, problems }
}

function readHsts (hsts: unknown): { value: HstsSettings | false, problems: string[] } {
  if (hsts === undefined || hsts === true) return { value: { ...HSTS_DEFAULTS }, problems: [] }
  if (hsts === false) return { value: false, problems: [] }
  if (!isObject(hsts)) return { value: false, problems: ['config.hsts must be true, false or {"maxAgeSeconds": N, "includeSubDomains": BOOLEAN}'] }
  const problems = unknownFields(hsts, 'config.hsts', ['maxAgeSeconds', 'includeSubDomains'])
  const value = { ...HSTS_DEFAULTS, ...hsts } as HstsSettings
  if (!wholeNumber(value.maxAgeSeconds, 0, 63_072_000)) problems.push('config.hsts.maxAgeSeconds must be a whole number from 0 to 63072000')
  if (typeof value.includeSubDomains !== 'boolean') problems.push('config.hsts.includeSubDomains must be boolean')
  return { value, problems }
}

/** The edge settings of a config object with their defaults, or the problems, each naming its field. */
export function edgeSettings (config: Record<string, unknown>): { settings: EdgeSettings, problems: string[] } {
  const tls = readTls(config.tls)
  const http2 = readHttp2(config.http2)
  const hsts = readHsts(config.hsts)
  return {
    settings: { ...(tls.pairs !== undefined && { tls: tls.pairs.map(({ cert, key }) => ({ cert, key })) }), http2: http2.value, hsts: hsts.value },
    problems: [...tls.problems, ...http2.problems, ...hsts.problems]
  }
}

/** The pairs with their paths resolved against `directory` (the config file's), as the operators write them. */
export function resolveTlsPaths (pairs: TlsFiles[], directory: string): TlsFiles[] {
  const at = (path: string): string => isAbsolute(path) ? path : resolve(directory, path)
  return pairs.map(({ cert, key }) => ({ cert: at(cert), key: at(key) }))
}

/** The header's value, or undefined when none is sent. */
export function hstsValue (hsts: HstsSettings | false): string | undefined {
  if (hsts === false) return undefined
  return `max-age=${hsts.maxAgeSeconds}${hsts.includeSubDomains ? '; includeSubDomains' : ''}`
}
