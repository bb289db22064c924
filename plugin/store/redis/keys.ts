/**
 * What a grant's member names start with: a record's key is the grant's prefix and its member name
 * (`grantPrefix`). The scripts name an access token's member (`at:`) too, to announce its revocation.
 */
export const MEMBERS = { code: 'code:', accessToken: 'at:', refreshToken: 'rt:', rotated: 'rs:', deviceCode: 'dc:' } as const

/**
 * Every key and channel name of the Redis store, under its prefix: the roles, the nonces and the
 * revocation feed take theirs from here, and a script derives a key only from a prefix named here.
 * A hash tag (`{...}`) puts the keys one script touches in one Redis Cluster slot: a grant's
 * records in `{g:grant}`, the clients and their origin index in `{clients}`, a user's sessions and
 * grants in `{u:user}`, the nonce sets in `{n:0}` to `{n:f}`, a cluster's quota counters in `{q}`.
 */
export class RedisKeys {
  readonly prefix: string

  constructor (prefix: string) {
    this.prefix = prefix
  }

  /** Where revocations are announced (a plain PUBLISH: every node of a cluster hears it). */
  get revocationChannel (): string {
    return `${this.prefix}revoked`
  }

  get serverSecret (): string {
    return `${this.prefix}secret`
  }

  /** Every record of a grant is this plus its member name (`code:`, `at:`, `rt:` and the hash). */
  grantPrefix (grantId: string): string {
    return `${this.prefix}{g:${grantId}}:`
  }

  /** A code's member name in its grant, and its key. */
  codeMember (codeHash: string): string {
    return `${MEMBERS.code}${codeHash}`
  }

  code (grantId: string, codeHash: string): string {
    return this.grantPrefix(grantId) + this.codeMember(codeHash)
  }

  accessToken (grantId: string, tokenHash: string): string {
    return `${this.grantPrefix(grantId)}${MEMBERS.accessToken}${tokenHash}`
  }

  refreshToken (grantId: string, tokenHash: string): string {
    return `${this.grantPrefix(grantId)}${MEMBERS.refreshToken}${tokenHash}`
  }

  /** A spent refresh token's member name during its rotation's grace: what its successor was. */
  rotatedMember (tokenHash: string): string {
    return `${MEMBERS.rotated}${tokenHash}`
  }

  deviceCode (grantId: string, deviceCodeHash: string): string {
    return `${this.grantPrefix(grantId)}${MEMBERS.deviceCode}${deviceCodeHash}`
  }

  /** The set of a grant's member names: what revoking it deletes. */
  grantMembers (grantId: string): string {
    return `${this.grantPrefix(grantId)}members`
  }

  client (clientId: string): string {
    return `${this.prefix}{clients}:${clientId}`
  }

  clientIndex (): string {
    return `${this.prefix}{clients}:index`
  }

  /** An origin's set of clients is this plus the origin (the script derives it: same slot). */
  originPrefix (): string {
    return `${this.prefix}{clients}:origin:`
  }

  /** The origins a client is indexed under, so that its next save can move them. */
  originsOf (clientId: string): string {
    return `${this.prefix}{clients}:origins:${clientId}`
  }

  user (username: string): string {
    return `${this.prefix}user:${username}`
  }

  /** A client's grants by until when they may have live records (a sorted set). */
  clientGrants (clientId: string): string {
    return `${this.prefix}{c:${clientId}}:grants`
  }

  /** The users who consented to a client (a set, beside its grants), for the developer console's count. */
  clientConsenters (clientId: string): string {
    return `${this.prefix}{c:${clientId}}:consenters`
  }

  session (userId: string, sessionHash: string): string {
    return `${this.prefix}{u:${userId}}:session:${sessionHash}`
  }

  sessions (userId: string): string {
    return `${this.prefix}{u:${userId}}:sessions`
  }

  /** A user's grants (`clientId:grantId`) by until when they may have live records. */
  userGrants (userId: string): string {
    return `${this.prefix}{u:${userId}}:grants`
  }

  /** The user's consents by client (in the slot of their consent sets). */
  consents (userId: string): string {
    return `${this.prefix}consents:{${userId}}`
  }

  consent (userId: string, clientId: string): string {
    return `${this.prefix}consent:{${userId}}:${clientId}`
  }

  /** A user code's hash, leading to its device code (`grantId:deviceCodeHash`) until it expires or is decided. */
  userCode (userCodeHash: string): string {
    return `${this.prefix}usercode:${userCodeHash}`
  }

  /** An initial access token's record is this plus its hash (the scripts derive it: same slot). */
  registrationTokenPrefix (): string {
    return `${this.prefix}{regtokens}:t:`
  }

  /** Every live initial access token: its id → its hash. */
  registrationTokenIndex (): string {
    return `${this.prefix}{regtokens}:index`
  }

  /** A rate-limit counter. */
  hits (key: string): string {
    return `${this.prefix}hits:${key}`
  }

  /** A (client, route) quota counter in a window; on a cluster all of them share the tag `{q}`. */
  quotaCounter (window: number, name: string): string {
    return `${this.prefix}{q}:${window}:${name}`
  }

  /** A nonce set: one of 256 (`set`) per slot tag (16, `{n:0}` to `{n:f}`) and minute. */
  nonceSet (tag: number, minute: number, set: number): string {
    return `${this.prefix}{n:${tag.toString(16)}}:${minute}:${set.toString(16)}`
  }
}
