import { ExpiringMap } from './expiring-map.ts'
import type { DeviceCodeRecord, DeviceDecisionResult, DevicePoll, DeviceRedeemResult, TokenRecords, UserCodeTarget } from '../records.ts'
import type { DeviceCodeStore, TokenStore } from '../roles.ts'

/** Device authorizations held at most; past it the oldest go first (a flood cannot grow them). */
const MAX_DEVICE_CODES = 100_000

/**
 * The embedded store's device authorizations: each method runs without awaiting, so that a poll, a
 * decision or a redemption is atomic as the Redis scripts are. Tokens go to the grants part.
 */
export class MemoryDeviceCodes implements DeviceCodeStore {
  readonly #clock: () => number
  readonly #grants: Pick<TokenStore, 'saveTokens'>
  readonly #codes: ExpiringMap<DeviceCodeRecord>
  readonly #userCodes: ExpiringMap<UserCodeTarget>

  /** `grants.saveTokens` must do its work before it returns (the embedded grants' does). */
  constructor (clock: () => number, grants: Pick<TokenStore, 'saveTokens'>) {
    this.#clock = clock
    this.#grants = grants
    this.#codes = new ExpiringMap(clock, MAX_DEVICE_CODES)
    this.#userCodes = new ExpiringMap(clock, MAX_DEVICE_CODES)
  }

  async saveDeviceCode (deviceCodeHash: string, userCodeHash: string, record: DeviceCodeRecord): Promise<boolean> {
    if (this.#userCodes.get(userCodeHash) !== undefined) return false
    this.#userCodes.set(userCodeHash, { grantId: record.grantId, deviceCodeHash }, record.expiresAt)
    // Kept as long again past its expiry: a late poll is told it expired, not that it is unknown.
    this.#codes.set(deviceCodeHash, structuredClone(record), 2 * record.expiresAt - this.#clock())
    return true
  }

  async findUserCode (userCodeHash: string): Promise<UserCodeTarget | undefined> {
    const target = this.#userCodes.get(userCodeHash)
    return target && { ...target }
  }

  async getDeviceCode (deviceCodeHash: string, grantId: string): Promise<DeviceCodeRecord | undefined> {
    const record = this.#codes.get(deviceCodeHash)
    return record?.grantId === grantId ? structuredClone(record) : undefined
  }

  async decideDeviceCode ({ deviceCodeHash, grantId }: UserCodeTarget, userCodeHash: string, { userId, approved }: { userId: string, approved: boolean }): Promise<DeviceDecisionResult> {
    const record = this.#codes.get(deviceCodeHash)
    if (record?.grantId !== grantId) return 'missing'
    if (record.expiresAt <= this.#clock()) return 'expired'
    if (record.status !== 'pending') return 'decided'
    record.status = approved ? 'approved' : 'denied'
    record.userId = userId
    this.#userCodes.delete(userCodeHash)
    return 'ok'
  }

  async pollDeviceCode (deviceCodeHash: string, grantId: string, clientId: string, toleranceMs: number): Promise<DevicePoll> {
    const record = this.#codes.get(deviceCodeHash)
    if (record?.grantId !== grantId) return { state: 'missing' }
    if (record.clientId !== clientId) return { state: 'other_client' }
    const now = this.#clock()
    if (record.status === 'spent') return { state: 'spent', record: structuredClone(record) }
    if (record.expiresAt <= now) return { state: 'expired', record: structuredClone(record) }
    let state: DevicePoll['state'] = record.status
    if (record.lastPollAt !== undefined && now - record.lastPollAt < record.interval * 1000 - toleranceMs) {
      record.interval += 5
      state = 'slow_down'
    }
    record.lastPollAt = now
    return { state, record: structuredClone(record) }
  }

  async redeemDeviceCode (deviceCodeHash: string, tokens: TokenRecords): Promise<DeviceRedeemResult> {
    const record = this.#codes.get(deviceCodeHash)
    if (record?.grantId !== tokens.grantId) return 'missing'
    if (record.status === 'spent') return 'spent'
    if (record.status !== 'approved') return 'undecided'
    record.status = 'spent'
    void this.#grants.saveTokens(tokens)
    return 'ok'
  }

  sweep (): void {
    this.#codes.sweep()
    this.#userCodes.sweep()
  }
}
