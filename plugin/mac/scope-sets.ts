/** Distinct scope sets held at most; past them a token's scope is a frozen copy of its own. */
export const MAX_SCOPE_SETS = 1024

/**
 * The scope sets of cached tokens, each held once: every token granted the same scopes (in the same
 * order) shares one frozen array. A population of tokens past the LRU replaces entries all the
 * time, and an entry's scope, kept until it is evicted, is old-space garbage when it goes; shared,
 * it is made once, and what is keyed by it (the upstream's scope header, upstream-request.ts) is
 * made once per set, not per token. Bounded: scopes are a registry's few ids, but a store could
 * hold anything.
 */
export class ScopeSets {
  readonly #sets = new Map<string, readonly string[]>()

  /** The shared frozen array of `scope`'s ids, or a frozen copy of its own once the bound is reached. */
  of (scope: readonly string[]): readonly string[] {
    const key = scope.join(' ')
    const held = this.#sets.get(key)
    // The same ids, not only the same text: ['a b'] and ['a', 'b'] join alike (a scope id has no
    // space, but a store could hold anything), and one token must never get another's scopes.
    if (held !== undefined && sameIds(held, scope)) return held
    const set = Object.freeze([...scope])
    if (held === undefined && this.#sets.size < MAX_SCOPE_SETS) this.#sets.set(key, set)
    return set
  }
}

function sameIds (held: readonly string[], scope: readonly string[]): boolean {
  if (held.length !== scope.length) return false
  for (let i = 0; i < held.length; i++) if (held[i] !== scope[i]) return false
  return true
}
