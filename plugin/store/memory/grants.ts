import { EventEmitter } from 'node:events'
import { ExpiringMap } from './expiring-map.ts'
import type { AccessTokenRecord, CodeRecord, RedeemResult, RefreshTokenRecord, RevocationListener, RotateResult, RotationGrace, TokenRecords } from '../records.ts'
import type { CodeStore, TokenStore } from '../roles.ts'

/** Everything issued from one authorization, by hash: what revoking the grant deletes. */
interface Family {
  codes: Set<string>
  accessTokens: Set<string>
  refreshTokens: Set<string>
}

/**
 * The embedded store's codes and tokens, grouped by grant as the Redis store's slots group them,
 * and the revocations announced in this process. `revoke` runs without awaiting, so that the
 * store's other roles can revoke within a step of their own.
 */
export class MemoryGrants implements CodeStore, TokenStore {
  readonly #clock: () => number
  readonly #families = new Map<string, Family>()
  readonly #codes: ExpiringMap<CodeRecord>
  readonly #accessTokens: ExpiringMap<AccessTokenRecord>
  readonly #refreshTokens: ExpiringMap<RefreshTokenRecord>
  /** Sealed successors of refresh tokens spent within their rotation grace, by the spent token's hash. */
  readonly #successors: ExpiringMap<string>
  readonly #revocations = new EventEmitter()

  constructor (clock: () => number) {
    this.#clock = clock
    this.#codes = new ExpiringMap(clock)
    this.#accessTokens = new ExpiringMap(clock)
    this.#refreshTokens = new ExpiringMap(clock)
    this.#successors = new ExpiringMap(clock)
  }

  async saveCode (codeHash: string, code: CodeRecord): Promise<void> {
    this.#codes.set(codeHash, structuredClone(code), code.expiresAt)
    this.#family(code.grantId).codes.add(codeHash)
  }

  async getCode (codeHash: string): Promise<CodeRecord | undefined> {
    const code = this.#codes.get(codeHash)
    return code && structuredClone(code)
  }

  async redeemCode (codeHash: string, tokens: TokenRecords): Promise<RedeemResult> {
    const code = this.#codes.get(codeHash)
    if (code === undefined) return 'missing'
    if (code.used === true) {
      this.revoke(code.grantId)
      return 'replayed'
    }
    code.used = true
    this.#save(tokens)
    return 'ok'
  }

  async saveTokens (tokens: TokenRecords): Promise<void> {
    this.#save(tokens)
  }

  async getAccessToken (tokenHash: string): Promise<AccessTokenRecord | undefined> {
    const token = this.#accessTokens.get(tokenHash)
    return token && structuredClone(token)
  }

  async getRefreshToken (tokenHash: string): Promise<RefreshTokenRecord | undefined> {
    const token = this.#refreshTokens.get(tokenHash)
    return token && structuredClone(token)
  }

  async rotateRefreshToken (tokenHash: string, tokens: TokenRecords, grace?: RotationGrace): Promise<RotateResult> {
    const refresh = this.#refreshTokens.get(tokenHash)
    if (refresh === undefined) return 'missing'
    if (refresh.spent === true) {
      const successor = this.#successors.get(tokenHash)
      if (successor !== undefined) return { successor }
      this.revoke(refresh.grantId)
      return 'replayed'
    }
    refresh.spent = true
    if (grace !== undefined && grace.graceMs > 0) this.#successors.set(tokenHash, grace.successor, this.#clock() + grace.graceMs)
    if (this.#deleteLive(refresh.accessTokenHash)) this.#revocations.emit('revoked', [refresh.accessTokenHash])
    this.#save(tokens)
    return 'ok'
  }

  async revokeGrant (grantId: string): Promise<string[]> {
    return this.revoke(grantId)
  }

  async onRevocation (listener: RevocationListener): Promise<void> {
    this.#revocations.on('revoked', listener)
  }

  /** Deletes every record of the grant and announces its live access tokens: their hashes. */
  revoke (grantId: string): string[] {
    const family = this.#families.get(grantId)
    if (family === undefined) return []
    this.#families.delete(grantId)
    for (const hash of family.codes) this.#codes.delete(hash)
    for (const hash of family.refreshTokens) {
      this.#refreshTokens.delete(hash)
      this.#successors.delete(hash)
    }
    const revoked = [...family.accessTokens].filter((hash) => this.#deleteLive(hash))
    if (revoked.length > 0) this.#revocations.emit('revoked', revoked)
    return revoked
  }

  /** Drops expired records, and the families left with none live. */
  sweep (): void {
    for (const map of [this.#codes, this.#accessTokens, this.#refreshTokens, this.#successors]) map.sweep()
    for (const [grantId, family] of this.#families) {
      const live = [...family.codes].some((hash) => this.#codes.get(hash)) ||
        [...family.accessTokens].some((hash) => this.#accessTokens.get(hash)) ||
        [...family.refreshTokens].some((hash) => this.#refreshTokens.get(hash))
      if (!live) this.#families.delete(grantId)
    }
  }

  #family (grantId: string): Family {
    let family = this.#families.get(grantId)
    if (family === undefined) {
      family = { codes: new Set(), accessTokens: new Set(), refreshTokens: new Set() }
      this.#families.set(grantId, family)
    }
    return family
  }

  #save (tokens: TokenRecords): void {
    const family = this.#family(tokens.grantId)
    this.#accessTokens.set(tokens.access.hash, structuredClone(tokens.access.record), tokens.access.record.expiresAt)
    family.accessTokens.add(tokens.access.hash)
    if (tokens.refresh !== undefined) {
      this.#refreshTokens.set(tokens.refresh.hash, structuredClone(tokens.refresh.record), tokens.refresh.record.expiresAt)
      family.refreshTokens.add(tokens.refresh.hash)
    }
  }

  /** Deletes an access token; true only when it was still live, as a Redis DEL would say. */
  #deleteLive (hash: string): boolean {
    return this.#accessTokens.get(hash) !== undefined && this.#accessTokens.delete(hash)
  }
}
