import { Ajv, type ErrorObject } from 'ajv'

/** What is wrong with an options object or config file; `problems` name each field. */
export class SchemaError extends Error {
  readonly problems: string[]

  constructor (problems: string[]) {
    super(problems.join('; '))
    this.problems = problems
    this.name = 'SchemaError'
  }
}

// verbose: every error carries its parentSchema, which the sentences below read.
const ajv = new Ajv({ useDefaults: true, allErrors: true, verbose: true })

/** `root.a.b[2]`, the way a reader of the file would point at the field. */
function fieldOf (root: string, error: ErrorObject): string {
  return root + error.instancePath.replaceAll('/', '.').replace(/\.(\d+)/g, '[$1]')
}

function range (schema: { type?: string, minimum?: number, maximum?: number }): string {
  const what = schema.type === 'integer' ? 'a whole number' : 'a number'
  if (schema.minimum !== undefined && schema.maximum !== undefined) return `${what} from ${schema.minimum} to ${schema.maximum}`
  return schema.minimum !== undefined ? `${what} of at least ${schema.minimum}` : `${what} of at most ${schema.maximum}`
}

function length (schema: { minLength?: number, maxLength?: number }): string {
  if (schema.maxLength === undefined) return `at least ${schema.minLength ?? 0} characters`
  return schema.minLength !== undefined ? `${schema.minLength} to ${schema.maxLength} characters` : `at most ${schema.maxLength} characters`
}

/** One sentence per problem, naming the field and what it may be. */
function describe (root: string, error: ErrorObject): string {
  const field = fieldOf(root, error)
  const parent = error.parentSchema as { type?: string, minimum?: number, maximum?: number, minLength?: number, maxLength?: number, properties?: object }
  switch (error.keyword) {
    case 'enum':
      return `${field} must be one of ${(error.params.allowedValues as unknown[]).map((value) => JSON.stringify(value)).join(', ')}`
    case 'const':
      return `${field} can only be ${JSON.stringify(error.params.allowedValue)}`
    case 'minimum':
    case 'maximum':
      return `${field} must be ${range(parent)}`
    case 'minLength':
    case 'maxLength':
      return `${field} must be ${length(parent)}`
    case 'additionalProperties':
      return `${field} has an unknown field ${String(error.params.additionalProperty)} (known: ${Object.keys(parent.properties ?? {}).join(', ')})`
    default:
      return `${field} ${String(error.message)}`
  }
}

/**
 * A validator for a JSON schema: fills in the schema's defaults on a copy of the input and returns
 * it, or throws a SchemaError whose problems name each bad field under `root`.
 */
export function compileValidator<T> (schema: object, root: string): (input: unknown) => T {
  const validate = ajv.compile<T>(schema)
  return (input) => {
    const copy = structuredClone(input ?? {})
    if (!validate(copy)) throw new SchemaError((validate.errors as ErrorObject[]).map((error) => describe(root, error)))
    return copy
  }
}
