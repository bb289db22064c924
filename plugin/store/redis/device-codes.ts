import { secondsUntil } from '../records.ts'
import type { DeviceCodeRecord, DeviceDecisionResult, DevicePoll, DevicePollState, DeviceRedeemResult, TokenRecords, UserCodeTarget } from '../records.ts'
import type { DeviceCodeStore } from '../roles.ts'
import type { RedisContext } from './context.ts'
import type { RedisGrants } from './grants.ts'
import { RedisPart } from './part.ts'

/** The fields of a device code's hash: its static record and what polls and decisions change. */
interface DeviceFields {
  record: string
  status: DeviceCodeRecord['status']
  interval: string
  lastPoll?: string
  userId?: string
}

function recordOf (fields: DeviceFields): DeviceCodeRecord {
  return {
    ...JSON.parse(fields.record) as Pick<DeviceCodeRecord, 'grantId' | 'clientId' | 'scope' | 'expiresAt'>,
    status: fields.status,
    interval: Number(fields.interval),
    ...(fields.lastPoll !== undefined && { lastPollAt: Number(fields.lastPoll) }),
    ...(fields.userId !== undefined && { userId: fields.userId })
  }
}

/** HGETALL's flat array as an object. */
function pairs (flat: string[]): DeviceFields {
  const fields: Record<string, string> = {}
  for (let i = 0; i < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!
  return fields as unknown as DeviceFields
}

/**
 * The Redis store's device authorizations: the device code a hash in its grant's slot (`{g:grant}`,
 * where its token set goes), the user code a key of its own leading to it. Every instance polls,
 * decides and redeems through the same scripts (`scripts.ts`).
 */
export class RedisDeviceCodes extends RedisPart implements DeviceCodeStore {
  readonly #grants: RedisGrants

  constructor (context: RedisContext, grants: RedisGrants) {
    super(context)
    this.#grants = grants
  }

  async saveDeviceCode (deviceCodeHash: string, userCodeHash: string, record: DeviceCodeRecord): Promise<boolean> {
    const { redis, keys, answer, clock } = this.context
    const ttl = secondsUntil(record.expiresAt, clock())
    // The user code first (it is in another slot): a taken one leaves nothing behind.
    const taken = await answer('set', redis.set(keys.userCode(userCodeHash), `${record.grantId}:${deviceCodeHash}`, 'EX', ttl, 'NX'))
    if (taken === null) return false
    const { grantId, clientId, scope, expiresAt } = record
    // Kept as long again past its expiry: a late poll is told it expired, not that it is unknown.
    await answer('macgateSaveDeviceCode', redis.macgateSaveDeviceCode(
      this.context.keys.deviceCode(grantId, deviceCodeHash), JSON.stringify({ grantId, clientId, scope, expiresAt }), clientId, expiresAt, record.interval, 2 * ttl
    ))
    return true
  }

  async findUserCode (userCodeHash: string): Promise<UserCodeTarget | undefined> {
    const { redis, keys, answer } = this.context
    const value = await answer('get', redis.get(keys.userCode(userCodeHash)))
    if (value === null) return undefined
    const [grantId = '', deviceCodeHash = ''] = value.split(':')
    return { grantId, deviceCodeHash }
  }

  async getDeviceCode (deviceCodeHash: string, grantId: string): Promise<DeviceCodeRecord | undefined> {
    const { redis, answer } = this.context
    const fields = await answer('hgetall', redis.hgetall(this.context.keys.deviceCode(grantId, deviceCodeHash))) as Partial<DeviceFields>
    return fields.record === undefined ? undefined : recordOf(fields as DeviceFields)
  }

  async decideDeviceCode ({ grantId, deviceCodeHash }: UserCodeTarget, userCodeHash: string, { userId, approved }: { userId: string, approved: boolean }): Promise<DeviceDecisionResult> {
    const { redis, keys, answer, clock } = this.context
    const result = await answer('macgateDecideDeviceCode', redis.macgateDecideDeviceCode(
      this.context.keys.deviceCode(grantId, deviceCodeHash), clock(), approved ? 'approved' : 'denied', userId
    )) as DeviceDecisionResult
    // The user code is in another slot: dropped after the decision, which the script alone guards.
    if (result === 'ok') await answer('del', redis.del(keys.userCode(userCodeHash)))
    return result
  }

  async pollDeviceCode (deviceCodeHash: string, grantId: string, clientId: string, toleranceMs: number): Promise<DevicePoll> {
    const { redis, answer, clock } = this.context
    const [state, flat] = await answer('macgatePollDeviceCode', redis.macgatePollDeviceCode(
      this.context.keys.deviceCode(grantId, deviceCodeHash), clock(), clientId, toleranceMs
    )) as [DevicePollState, string[]?]
    return flat === undefined ? { state } : { state, record: recordOf(pairs(flat)) }
  }

  async redeemDeviceCode (deviceCodeHash: string, tokens: TokenRecords): Promise<DeviceRedeemResult> {
    const { redis, keys, answer } = this.context
    return await answer('macgateRedeemDeviceCode', redis.macgateRedeemDeviceCode(
      this.context.keys.deviceCode(tokens.grantId, deviceCodeHash), keys.grantMembers(tokens.grantId), this.#grants.tokenSet(tokens)
    )) as DeviceRedeemResult
  }
}
