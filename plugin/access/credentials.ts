import { createCipheriv, createDecipheriv, hash, randomBytes } from 'node:crypto'
import { constantTimeEqual, sameCharactersAt } from './constant-time.ts'
import { HmacKey, hmacOnce, hmacOnceByKeyDigest } from './hmac-key.ts'

// Codes and tokens are `<grantId>.<random><tag>`. The grant id puts every record of one grant in
// one Redis Cluster hash slot and lets a token's record be found from the token alone; the tag,
// an HMAC under the server secret, lets a forged or random value be refused without a store read.
const GRANT_ID_LENGTH = 16
const TAG_LENGTH = 16
const ISSUED = /^([A-Za-z0-9_-]{16})\.[A-Za-z0-9_-]{22,43}$/

export function randomBase64Url (bytes: number): string {
  return randomBytes(bytes).toString('base64url')
}

export function newGrantId (): string {
  return randomBase64Url(12)
}

/** The server secret as an HMAC key, prepared once rather than on every tag (each token cache miss checks one). */
let secretKey: { secret: string, key: HmacKey } | undefined

/** HMAC-SHA256 under the server secret, base64url: a body's tag is its first `TAG_LENGTH` characters; an open id is one whole. */
function secretDigest (secret: string, text: string): string {
  if (secretKey?.secret !== secret) secretKey = { secret, key: new HmacKey('sha256', secret) }
  return secretKey.key.digest(text, 'base64url')
}

function mint (secret: string, grantId: string, randomBytesCount: number): string {
  const body = `${grantId}.${randomBase64Url(randomBytesCount)}`
  return body + secretDigest(secret, body).slice(0, TAG_LENGTH)
}

/** Authorization code: 128 random bits after the grant id. */
export function mintCode (secret: string, grantId: string): string {
  return mint(secret, grantId, 16)
}

/** Access or refresh token: 256 random bits after the grant id. */
export function mintToken (secret: string, grantId: string): string {
  return mint(secret, grantId, 32)
}

/** The grant id of a code or token this server issued, or undefined for anything else. */
export function grantIdOf (secret: string, value: string): string | undefined {
  if (value.length < GRANT_ID_LENGTH + 1 + 22 + TAG_LENGTH || value.length > GRANT_ID_LENGTH + 1 + 43 + TAG_LENGTH) return undefined
  const body = value.slice(0, -TAG_LENGTH)
  // `test`, not `exec`: no match array on every cache miss; the grant id is the body's start.
  if (!ISSUED.test(body)) return undefined
  // The value's tag against the digest's start, both read in place: no slice, no Buffer (each token cache miss checks one).
  return sameCharactersAt(secretDigest(secret, body), 0, value, body.length, TAG_LENGTH) ? body.slice(0, GRANT_ID_LENGTH) : undefined
}

/** mac_key: 160 random bits, used as the UTF-8 bytes of its base64url text. */
export function mintMacKey (): string {
  return randomBase64Url(20)
}

/** What the store keeps instead of a code, token or client secret. */
export function hashSecret (value: string): string {
  // One-shot: no Hash stream object (a token cache miss hashes the token).
  return hash('sha256', value, 'base64url')
}

export function secretMatches (value: string, storedHash: string): boolean {
  return constantTimeEqual(hashSecret(value), storedHash)
}

/** Where a seal's key is written: one buffer, reused, since each cipher takes (copies) its key as it is made. */
const SEALING_KEY = Buffer.alloc(32)

/**
 * HMAC-SHA256 under the token of the seal's purpose. With the token's hash (`hashSecret`, which a
 * token cache miss has made already), the HMAC takes it in the token's place, as RFC 2104 does for
 * a key longer than a block (every token is): one hash of the token a miss, not two.
 */
function sealingKey (token: string, purpose: string, tokenHash?: string): Buffer {
  return tokenHash === undefined ? hmacOnce('sha256', token, purpose, SEALING_KEY) : hmacOnceByKeyDigest('sha256', token, tokenHash, purpose, SEALING_KEY)
}

function seal (token: string, purpose: string, text: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', sealingKey(token, purpose), iv)
  const sealed = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')
}

/** The sealed bytes, or a throw when they were not sealed under this token and purpose (GCM's tag). */
function open (token: string, purpose: string, sealed: string, tokenHash?: string): Buffer {
  const bytes = Buffer.from(sealed, 'base64url')
  const decipher = createDecipheriv('aes-256-gcm', sealingKey(token, purpose, tokenHash), bytes.subarray(0, 12))
  decipher.setAuthTag(bytes.subarray(12, 28))
  const text = decipher.update(bytes.subarray(28))
  // GCM is a stream mode: `final` checks the tag and has no bytes left to give (nothing to join).
  decipher.final()
  return text
}

/** Encrypts a mac_key so that only a holder of the access token can read it back. */
export function sealMacKey (token: string, macKey: string): string {
  return seal(token, 'macgate mac_key seal', macKey)
}

/**
 * The mac_key's UTF-8 bytes (what a signing key is made of: no text of it is kept), given the
 * token and, when the caller has made it, the token's hash (`hashSecret`).
 */
export function openMacKey (token: string, sealed: string, tokenHash?: string): Buffer {
  return open(token, 'macgate mac_key seal', sealed, tokenHash)
}

/** Encrypts a refresh's answer so that only a holder of the spent refresh token can read it back. */
export function sealSuccessor (refreshToken: string, body: string): string {
  return seal(refreshToken, 'macgate successor seal', body)
}

export function openSuccessor (refreshToken: string, sealed: string): string {
  return open(refreshToken, 'macgate successor seal', sealed).toString('utf8')
}

/** Stable for one (user, client) pair, unrelated across clients, never the internal user id. */
export function deriveOpenId (serverSecret: string, clientId: string, userId: string): string {
  return secretDigest(serverSecret, `${clientId}:${userId}`)
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
