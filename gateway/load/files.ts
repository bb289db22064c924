// The files `macgate load` reads: a token population (--credentials), a path mix (--paths) and the
// codes or refresh tokens to spend at the token endpoint (--token-endpoint). Each refusal names the
// file and the line, and never quotes a line's content: it may hold a key.
import { readFile } from 'node:fs/promises'
import type { Credentials } from './requests.ts'

/** A file that cannot be used as given; the command turns it into a usage error. */
export class LoadFileError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'LoadFileError'
  }
}

interface Line {
  number: number
  text: string
}

/** The file's lines that hold something: not blank, not a `#` comment, with their 1-based numbers. */
async function linesOf (file: string, what: string): Promise<Line[]> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new LoadFileError(`cannot read the ${what} file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
    .map((line, index) => ({ number: index + 1, text: line.trim() }))
    .filter(({ text }) => text !== '' && !text.startsWith('#'))
  if (lines.length === 0) throw new LoadFileError(`the ${what} file ${file} is empty`)
  return lines
}

function jsonObject (file: string, line: Line): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(line.text)
  } catch {
    throw new LoadFileError(`${file} line ${line.number}: not a JSON object`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new LoadFileError(`${file} line ${line.number}: not a JSON object`)
  return value as Record<string, unknown>
}

function nonEmptyString (file: string, line: Line, value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw new LoadFileError(`${file} line ${line.number}: ${name} is missing or not a string`)
  return value
}

const CSV_HEADER = ['access_token', 'mac_key']

/** A CSV field, without the quotes around it (CSV's `""` inside quotes is one `"`). */
function unquote (field: string): string {
  const trimmed = field.trim()
  return trimmed.length >= 2 && trimmed.startsWith('"') && trimmed.endsWith('"') ? trimmed.slice(1, -1).replaceAll('""', '"') : trimmed
}

/**
 * A token population: JSON lines (token responses as saved: `access_token`, `mac_key`, optionally
 * `mac_algorithm`) or CSV (`access_token,mac_key[,mac_algorithm]`, with or without that header).
 * The first line decides which.
 */
export async function readCredentials (file: string): Promise<Credentials[]> {
  const lines = await linesOf(file, 'credentials')
  if (lines[0]!.text.startsWith('{')) {
    return lines.map((line) => {
      const record = jsonObject(file, line)
      const macAlgorithm = record.mac_algorithm
      return {
        accessToken: nonEmptyString(file, line, record.access_token, 'access_token'),
        macKey: nonEmptyString(file, line, record.mac_key, 'mac_key'),
        ...(macAlgorithm !== undefined && { macAlgorithm: nonEmptyString(file, line, macAlgorithm, 'mac_algorithm') })
      }
    })
  }
  const header = lines[0]!.text.split(',').map(unquote)
  const rows = CSV_HEADER.every((name, index) => header[index] === name) ? lines.slice(1) : lines
  if (rows.length === 0) throw new LoadFileError(`the credentials file ${file} has a header and no tokens`)
  return rows.map((line) => {
    const fields = line.text.split(',').map(unquote)
    if (fields.length < 2 || fields.length > 3 || fields.some((field) => field === '')) {
      throw new LoadFileError(`${file} line ${line.number}: expected access_token,mac_key[,mac_algorithm] (CSV) or a JSON object, found ${fields.length} field${fields.length === 1 ? '' : 's'}`)
    }
    return { accessToken: fields[0]!, macKey: fields[1]!, ...(fields[2] !== undefined && { macAlgorithm: fields[2] }) }
  })
}

export interface WeightedPath {
  path: string
  weight: number
}

/** Checks a request target given on the command line or in a paths file: origin-relative. */
export function checkPath (path: string): string | undefined {
  if (!path.startsWith('/') || path.startsWith('//')) return 'must start with one /'
  if (/[\s#]/.test(path)) return 'must not contain spaces or #'
  return undefined
}

/** A path mix: `PATH [WEIGHT]` a line, the path with its query string, the weight 1 if left out. */
export async function readPaths (file: string): Promise<WeightedPath[]> {
  const lines = await linesOf(file, 'paths')
  return lines.map((line) => {
    const [path, weightText, ...extra] = line.text.split(/\s+/)
    const problem = checkPath(path!)
    if (problem !== undefined) throw new LoadFileError(`${file} line ${line.number}: the path ${problem}`)
    const weight = weightText === undefined ? 1 : Number(weightText)
    if (extra.length > 0 || !Number.isFinite(weight) || weight <= 0) throw new LoadFileError(`${file} line ${line.number}: expected PATH [WEIGHT], the weight a positive number`)
    return { path: path!, weight }
  })
}

export type GrantType = 'authorization_code' | 'refresh_token'

/** The parameter that carries each grant's single-use value. */
export const GRANT_PARAMETER: Record<GrantType, string> = { authorization_code: 'code', refresh_token: 'refresh_token' }

/**
 * The grants to spend at the token endpoint, one request each: a bare code (or refresh token) a
 * line, or a JSON object of token request parameters (`{"code":"..","code_verifier":".."}`).
 */
export async function readGrants (file: string, grantType: GrantType): Promise<Array<Record<string, string>>> {
  const lines = await linesOf(file, 'token-endpoint')
  const name = GRANT_PARAMETER[grantType]
  return lines.map((line) => {
    if (!line.text.startsWith('{')) {
      if (/\s/.test(line.text)) throw new LoadFileError(`${file} line ${line.number}: expected one ${name} or a JSON object`)
      return { [name]: line.text }
    }
    const record = jsonObject(file, line)
    const params: Record<string, string> = {}
    for (const [key, value] of Object.entries(record)) params[key] = nonEmptyString(file, line, value, key)
    if (params[name] === undefined) throw new LoadFileError(`${file} line ${line.number}: ${name} is missing`)
    return params
  })
}
