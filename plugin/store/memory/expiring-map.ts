/**
 * A map whose entries expire on their own, like Redis keys with a TTL, by the store's clock; with
 * a capacity, a new entry past it pushes out the oldest, so that a flood of keys cannot grow it.
 */
export class ExpiringMap<V> {
  readonly #entries = new Map<string, { value: V, expiresAt: number }>()
  readonly #clock: () => number
  readonly #capacity: number

  constructor (clock: () => number, capacity = Number.POSITIVE_INFINITY) {
    this.#clock = clock
    this.#capacity = capacity
  }

  get (key: string): V | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= this.#clock()) {
      this.#entries.delete(key)
      return undefined
    }
    return entry.value
  }

  set (key: string, value: V, expiresAt: number): void {
    if (this.#entries.size >= this.#capacity && !this.#entries.has(key)) this.#dropOldest()
    this.#entries.set(key, { value, expiresAt })
  }

  expiresAt (key: string): number | undefined {
    return this.#entries.get(key)?.expiresAt
  }

  * entries (): Generator<[string, V]> {
    for (const [key, entry] of this.#entries) yield [key, entry.value]
  }

  #dropOldest (): void {
    // Called only when the map is full, so there is a first (oldest) key.
    this.#entries.delete(this.#entries.keys().next().value!)
  }

  delete (key: string): boolean {
    return this.#entries.delete(key)
  }

  sweep (): void {
    const now = this.#clock()
    for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key)
  }
}
