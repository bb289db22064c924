import type { Pending } from '../pending.ts'
import { secondsUntil } from '../records.ts'
import type { AccessTokenRecord, CodeRecord, RedeemResult, RefreshTokenRecord, RevocationListener, RotateResult, RotationGrace, TokenRecords } from '../records.ts'
import type { CodeStore, TokenStore } from '../roles.ts'
import { orUnavailable, parse, type RedisContext } from './context.ts'
import { MEMBERS } from './keys.ts'
import { RedisPart } from './part.ts'
import type { RevocationFeed } from './revocation-feed.ts'
import { TokenReads } from './token-reads.ts'

/**
 * The Redis store's codes and tokens: every record of a grant in its slot (`{g:grant}`), with the
 * set of their names, so that one script revokes the grant and announces it on the channel that
 * `revocation-feed.ts` hears.
 */
export class RedisGrants extends RedisPart implements CodeStore, TokenStore {
  readonly #feed: RevocationFeed
  readonly #tokenReads: TokenReads
  #subscribed: Promise<void> | undefined
  readonly #listeners: RevocationListener[] = []

  /** The feed must hand what it hears to `notify`. */
  constructor (context: RedisContext, feed: RevocationFeed) {
    super(context)
    this.#feed = feed
    this.#tokenReads = new TokenReads(context, context.redis.isCluster)
  }

  async saveCode (codeHash: string, code: CodeRecord): Promise<void> {
    const { redis, keys, answer, clock } = this.context
    const member = keys.codeMember(codeHash)
    await answer('macgateSaveCode', redis.macgateSaveCode(keys.code(code.grantId, codeHash), keys.grantMembers(code.grantId), JSON.stringify(code), secondsUntil(code.expiresAt, clock()), member))
  }

  async getCode (codeHash: string, grantId: string): Promise<CodeRecord | undefined> {
    const { redis, keys, answer } = this.context
    const fields = await answer('hgetall', redis.hgetall(keys.code(grantId, codeHash)))
    if (fields.record === undefined) return undefined
    return { ...JSON.parse(fields.record) as CodeRecord, ...(fields.used !== undefined && { used: true }) }
  }

  async redeemCode (codeHash: string, tokens: TokenRecords): Promise<RedeemResult> {
    const { redis, keys, answer } = this.context
    return await answer('macgateRedeemCode', redis.macgateRedeemCode(keys.code(tokens.grantId, codeHash), keys.grantMembers(tokens.grantId), keys.revocationChannel, this.tokenSet(tokens))) as RedeemResult
  }

  async saveTokens (tokens: TokenRecords): Promise<void> {
    const { redis, keys, answer } = this.context
    await answer('macgateSaveTokens', redis.macgateSaveTokens(keys.grantMembers(tokens.grantId), this.tokenSet(tokens)))
  }

  /** Read with the turn's other token reads (`token-reads.ts`), answered as a `Pending`: the verifier's miss makes no promise of its own. */
  getAccessToken (tokenHash: string, grantId: string): Pending<AccessTokenRecord | undefined> {
    return this.#tokenReads.read(this.context.keys.accessToken(grantId, tokenHash), parse<AccessTokenRecord>)
  }

  async getRefreshToken (tokenHash: string, grantId: string): Promise<RefreshTokenRecord | undefined> {
    const { redis, keys, answer } = this.context
    const fields = await answer('hgetall', redis.hgetall(keys.refreshToken(grantId, tokenHash)))
    if (fields.record === undefined) return undefined
    return { ...JSON.parse(fields.record) as RefreshTokenRecord, ...(fields.spent !== undefined && { spent: true }) }
  }

  async rotateRefreshToken (tokenHash: string, tokens: TokenRecords, grace?: RotationGrace): Promise<RotateResult> {
    const { redis, keys, answer } = this.context
    const result = await answer('macgateRotateRefresh', redis.macgateRotateRefresh(
      keys.refreshToken(tokens.grantId, tokenHash), keys.grantMembers(tokens.grantId), keys.revocationChannel, this.tokenSet(tokens), grace?.graceMs ?? 0, grace?.successor ?? '', keys.rotatedMember(tokenHash)
    )) as RedeemResult | ['grace', string]
    return Array.isArray(result) ? { successor: result[1] } : result
  }

  async revokeGrant (grantId: string): Promise<string[]> {
    const { redis, keys, answer } = this.context
    return await answer('macgateRevokeGrant', redis.macgateRevokeGrant(keys.grantMembers(grantId), keys.grantPrefix(grantId), keys.revocationChannel)) as string[]
  }

  async onRevocation (listener: RevocationListener): Promise<void> {
    this.#listeners.push(listener)
    this.#subscribed ??= this.#feed.start()
    await orUnavailable(this.#subscribed)
  }

  /** What the feed hears: revoked hashes, or `null` after a gap. */
  notify (hashes: string[] | null): void {
    for (const listener of this.#listeners) listener(hashes)
  }

  /** The token set as the scripts' `save` reads it (the device codes' too); lifetimes from the records' own expiry. */
  tokenSet ({ grantId, access, refresh }: TokenRecords): string {
    const now = this.context.clock()
    const entry = (member: string, { hash, record }: { hash: string, record: { expiresAt: number } }) =>
      ({ member: member + hash, record: JSON.stringify(record), ttl: secondsUntil(record.expiresAt, now) })
    return JSON.stringify({
      prefix: this.context.keys.grantPrefix(grantId),
      access: entry(MEMBERS.accessToken, access),
      ...(refresh !== undefined && { refresh: entry(MEMBERS.refreshToken, refresh) })
    })
  }
}
