import { ExpiringMap } from './expiring-map.ts'
import type { RegistrationTokenRecord } from '../records.ts'
import type { RegistrationTokens } from '../roles.ts'

/** The embedded store's initial access tokens, by hash; an operator's few, each expiring on its own. */
export class MemoryRegistrationTokens implements RegistrationTokens {
  readonly #byHash: ExpiringMap<RegistrationTokenRecord>

  constructor (clock: () => number) {
    this.#byHash = new ExpiringMap(clock)
  }

  async saveRegistrationToken (token: RegistrationTokenRecord): Promise<void> {
    this.#byHash.set(token.hash, structuredClone(token), token.expiresAt)
  }

  async listRegistrationTokens (): Promise<RegistrationTokenRecord[]> {
    this.#byHash.sweep()
    return [...this.#byHash.entries()].map(([, token]) => structuredClone(token))
  }

  async revokeRegistrationToken (id: string): Promise<boolean> {
    this.#byHash.sweep()
    const found = [...this.#byHash.entries()].find(([, token]) => token.id === id)
    return found !== undefined && this.#byHash.delete(found[0])
  }

  async useRegistrationToken (hash: string, now: number): Promise<string | undefined> {
    const token = this.#byHash.get(hash)
    if (token === undefined || token.expiresAt <= now || token.usesLeft < 1) return undefined
    token.usesLeft--
    if (token.usesLeft === 0) this.#byHash.delete(hash)
    return token.id
  }

  sweep (): void {
    this.#byHash.sweep()
  }
}
