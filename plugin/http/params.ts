import { errors } from './errors.ts'
import { splitPathAndQuery } from './path-and-query.ts'

export type Params = Record<string, string | string[] | undefined>

// Longest value accepted for any parameter; longer ones are malformed, not truncated.
const MAX_LENGTH = 4096
const MAX_PARAMS = 64

function decode (component: string): string {
  try {
    return decodeURIComponent(component.replaceAll('+', ' '))
  } catch {
    throw errors.invalidRequest('a parameter is not percent-encoded UTF-8')
  }
}

/**
 * Parses a query string or form body strictly: unlike the lenient parsers, which keep a bad
 * escape such as `%FF` as literal text, a byte sequence that is not UTF-8 is a 96002.
 */
export function parseForm (text: string): Params {
  const params: Params = Object.create(null)
  const pairs = text.split('&').filter((pair) => pair !== '')
  if (pairs.length > MAX_PARAMS) throw errors.invalidRequest('too many parameters')
  for (const pair of pairs) {
    const equals = pair.indexOf('=')
    const name = decode(equals === -1 ? pair : pair.slice(0, equals))
    const value = equals === -1 ? '' : decode(pair.slice(equals + 1))
    const earlier = params[name]
    params[name] = earlier === undefined ? value : [earlier, value].flat()
  }
  return params
}

/** A URL's query parameters, parsed strictly from the URL as sent. */
export function queryOf (url: string): Params {
  return parseForm(splitPathAndQuery(url).query)
}

/** One parameter's value: undefined when absent, 96002 when repeated or over-long. */
export function single (params: Params, name: string): string | undefined {
  const value = params[name]
  if (value === undefined) return undefined
  if (Array.isArray(value)) throw errors.invalidRequest(`${name} is repeated`)
  if (value.length > MAX_LENGTH) throw errors.invalidRequest(`${name} is too long`)
  return value
}

export function required (params: Params, name: string): string {
  const value = single(params, name)
  if (value === undefined || value === '') throw errors.invalidRequest(`${name} is missing`)
  return value
}
