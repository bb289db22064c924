import { errors } from '../http/errors.ts'

export interface ScopeDefinition {
  id: string
  description: string
}

/** The public Xiaomi permission list: the default registry (contract section 7). */
export const defaultScopes: ScopeDefinition[] = [
  { id: '1', description: 'Profile' },
  { id: '2', description: 'Friends' },
  { id: '3', description: 'Open ID' },
  { id: '4', description: 'Phone number' },
  { id: '6', description: 'Email address' },
  { id: '1000', description: 'Router' },
  { id: '2000', description: 'Cloud contacts' },
  { id: '6000', description: 'Smart home' },
  { id: '7000', description: 'Yellow pages' },
  { id: '11000', description: 'Cloud gallery' },
  { id: '12001', description: 'App data in the cloud' },
  { id: '13002', description: 'Fitness data' },
  { id: '16000', description: 'Coupons' }
]

export class ScopeRegistry {
  readonly #byId: Map<string, ScopeDefinition>

  constructor (definitions: ScopeDefinition[] = defaultScopes) {
    this.#byId = new Map(definitions.map((definition) => [definition.id, definition]))
  }

  /** Every scope id, as the metadata document lists them. */
  ids (): string[] {
    return [...this.#byId.keys()]
  }

  has (id: string): boolean {
    return this.#byId.has(id)
  }

  describe (id: string): string {
    return this.#byId.get(id)?.description ?? id
  }

  /** Every item known to the registry and allowed to the client, or 96007. */
  check (requested: string[], allowed: string[]): string[] {
    for (const item of requested) {
      if (!this.has(item)) throw errors.invalidScope(`unknown scope ${item}`)
      if (!allowed.includes(item)) throw errors.invalidScope(`scope ${item} not allowed for this client`)
    }
    return requested
  }
}

/** Splits on spaces (runs collapse) and drops duplicates, keeping the first order. */
export function parseScope (scope: string): string[] {
  return [...new Set(scope.split(' ').filter((item) => item !== ''))]
}

export function formatScope (scope: string[]): string {
  return scope.join(' ')
}

/** A narrower scope for a refresh: every item must already be granted (else 96007). */
export function narrowScope (granted: string[], requested: string[]): string[] {
  for (const item of requested) {
    if (!granted.includes(item)) throw errors.invalidScope(`scope ${item} was not granted`)
  }
  return requested
}
