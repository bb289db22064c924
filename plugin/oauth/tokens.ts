import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

// Codes and tokens are `<grantId>.<random>`: the grant id puts every record of one grant in
// one Redis Cluster hash slot, and lets a token's record be found from the token alone.
const GRANT_ID_LENGTH = 16
const GRANT_ID = /^[A-Za-z0-9_-]{16}$/

export function randomBase64Url (bytes: number): string {
  return randomBytes(bytes).toString('base64url')
}

export function newGrantId (): string {
  return randomBase64Url(12)
}

/** Authorization code: 128 random bits after the grant id. */
export function mintCode (grantId: string): string {
  return `${grantId}.${randomBase64Url(16)}`
}

/** Access or refresh token: 256 random bits after the grant id. */
export function mintToken (grantId: string): string {
  return `${grantId}.${randomBase64Url(32)}`
}

/** mac_key: 160 random bits, used as the UTF-8 bytes of its base64url text. */
export function mintMacKey (): string {
  return randomBase64Url(20)
}

/** The grant id inside a code or token, or undefined when the value is not one of ours. */
export function grantIdOf (value: string): string | undefined {
  if (value.length < GRANT_ID_LENGTH + 2 || value[GRANT_ID_LENGTH] !== '.') return undefined
  const grantId = value.slice(0, GRANT_ID_LENGTH)
  return GRANT_ID.test(grantId) ? grantId : undefined
}

/** What the store keeps instead of a code, token or client secret. */
export function hashSecret (value: string): string {
  return createHash('sha256').update(value).digest('base64url')
}

export function secretMatches (value: string, storedHash: string): boolean {
  const given = Buffer.from(hashSecret(value))
  const stored = Buffer.from(storedHash)
  return given.length === stored.length && timingSafeEqual(given, stored)
}

function sealingKey (token: string): Buffer {
  return createHmac('sha256', token).update('macgate mac_key seal').digest()
}

/** Encrypts a mac_key so that only a holder of the access token can read it back. */
export function sealMacKey (token: string, macKey: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', sealingKey(token), iv)
  const sealed = Buffer.concat([cipher.update(macKey, 'utf8'), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')
}

export function openMacKey (token: string, sealed: string): string {
  const bytes = Buffer.from(sealed, 'base64url')
  const decipher = createDecipheriv('aes-256-gcm', sealingKey(token), bytes.subarray(0, 12))
  decipher.setAuthTag(bytes.subarray(12, 28))
  return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')
}

/** Stable for one (user, client) pair, unrelated across clients, never the internal user id. */
export function deriveOpenId (serverSecret: string, clientId: string, userId: string): string {
  return createHmac('sha256', serverSecret).update(`${clientId}:${userId}`).digest('base64url')
}

const MIN_CLIENT_ID = 10n ** 18n

/** A random client_id in [10^18, 2^63-1], as decimal text (it does not fit a JS number). */
export function newClientId (): string {
  for (;;) {
    const candidate = randomBytes(8).readBigUInt64BE() >> 1n
    if (candidate >= MIN_CLIENT_ID) return candidate.toString()
  }
}

const MAX_CLIENT_ID = 2n ** 63n - 1n
const CLIENT_ID = /^[1-9][0-9]{0,18}$/

export function isClientId (value: string): boolean {
  return CLIENT_ID.test(value) && BigInt(value) <= MAX_CLIENT_ID
}
