import { hash } from 'node:crypto'

export type HmacHash = 'sha1' | 'sha256'

/** SHA-1's and SHA-256's block: the length of an HMAC key's pads. */
const BLOCK = 64
const DIGEST_LENGTH: Record<HmacHash, number> = { sha1: 20, sha256: 32 }

/**
 * Where a message goes behind its inner pad: one buffer, reused by every call (each runs to its
 * end before the next), and a view of it for each length met, made once (at most one per byte of
 * it: bounded), so that a MAC makes no view of its own. A message that may not fit gets a buffer
 * of its own.
 */
const scratch = Buffer.allocUnsafeSlow(4096)
const scratchViews: Buffer[] = []

/** A key's pads: the inner pad, then the outer pad with room behind it for the inner digest (the outer hash's whole input). */
interface Pads {
  readonly hashName: HmacHash
  readonly inner: Buffer
  readonly outer: Buffer
}

/** Pads for `hashName` in memory of their own, not a slice of the shared pool (a cached token's key would keep a pool's 8 KB alive). */
function newPads (hashName: HmacHash): Pads {
  const memory = new ArrayBuffer(2 * BLOCK + DIGEST_LENGTH[hashName])
  return { hashName, inner: Buffer.from(memory, 0, BLOCK), outer: Buffer.from(memory, BLOCK) }
}

/** The key's bytes XORed into both pads; a key longer than a block is replaced by its digest (RFC 2104). */
function writePads (pads: Pads, key: string | Buffer): void {
  const { hashName, inner } = pads
  const long = typeof key === 'string' ? Buffer.byteLength(key, 'utf8') > BLOCK : key.length > BLOCK
  // Written as text, no Buffer made for it: the key's UTF-8 bytes, or its digest one character a byte.
  const length = long
    ? inner.write(hash(hashName, key, 'binary'), 'latin1')
    : typeof key === 'string' ? inner.write(key, 'utf8') : key.copy(inner)
  xorPads(pads, length)
}

/** The key's `length` bytes, at the inner pad's start, zero-filled to a block and XORed into both pads. */
function xorPads ({ inner, outer }: Pads, length: number): void {
  inner.fill(0, length)
  for (let i = 0; i < BLOCK; i++) {
    const byte = inner[i]!
    inner[i] = byte ^ 0x36
    outer[i] = byte ^ 0x5c
  }
}

/** The MAC as text, or written into `into` (the digest's length: a buffer made by `crypto.hash` costs more than the hash). */
function macOf (pads: Pads, message: string, encoding: 'base64' | 'base64url'): string
function macOf (pads: Pads, message: string, into: Buffer): Buffer
function macOf ({ hashName, inner, outer }: Pads, message: string, encoding: 'base64' | 'base64url' | Buffer): string | Buffer {
  // UTF-8 takes at most 3 bytes for a UTF-16 unit: beyond that, measure.
  const room = message.length * 3 <= scratch.length - BLOCK ? scratch : Buffer.allocUnsafe(BLOCK + Buffer.byteLength(message, 'utf8'))
  inner.copy(room)
  const length = BLOCK + room.write(message, BLOCK, 'utf8')
  const input = room === scratch ? (scratchViews[length] ??= scratch.subarray(0, length)) : room
  // The inner digest as 'binary' (latin1) text, one character a byte (no Buffer made for it), behind the outer pad.
  outer.write(hash(hashName, input, 'binary'), BLOCK, 'latin1')
  if (typeof encoding === 'string') return hash(hashName, outer, encoding)
  encoding.write(hash(hashName, outer, 'binary'), 'latin1')
  return encoding
}

/**
 * An HMAC key (RFC 2104) prepared once as its inner and outer pads, so that a MAC is two one-shot
 * `crypto.hash` calls: over inner pad ‖ message, then over outer pad ‖ that digest. Why not
 * `createHmac`: it makes an Hmac object whose init looks the digest up again, on every MAC; in a
 * busy gateway that object and its calls cost several µs a request (bench/HISTORY.md), where a
 * one-shot hash uses the digest Node keeps. The bytes are createHmac's (test/plugin/access/hmac-key.test.ts).
 */
export class HmacKey {
  readonly #pads: Pads

  /** `key` as bytes, or as text to be UTF-8 encoded (a mac_key, the server secret). */
  constructor (hashName: HmacHash, key: string | Buffer) {
    this.#pads = newPads(hashName)
    writePads(this.#pads, key)
  }

  /** HMAC(key, utf8(message)), as text. */
  digest (message: string, encoding: 'base64' | 'base64url'): string {
    return macOf(this.#pads, message, encoding)
  }
}

/** The pads of a key used once, one set a hash, reused. */
const oneOffPads: Record<HmacHash, Pads> = { sha1: newPads('sha1'), sha256: newPads('sha256') }

/**
 * HMAC(key, utf8(message)) under a key used once: no object of its own, its pads written into
 * shared ones; the answer written into `into` when given (of the digest's length; the caller's,
 * used at once: a cipher's key), else into a buffer of its own.
 */
export function hmacOnce (hashName: HmacHash, key: string | Buffer, message: string, into: Buffer = Buffer.alloc(DIGEST_LENGTH[hashName])): Buffer {
  const pads = oneOffPads[hashName]
  writePads(pads, key)
  return macOf(pads, message, into)
}

/**
 * `hmacOnce(hashName, key, message)` for a caller that holds the key's digest already (`keyDigest`:
 * `hash(hashName, key, 'base64url')`, e.g. a token's hash as the store keys it): a key longer than
 * a block is replaced by that digest (RFC 2104), so it is written into the pads as it is, not
 * hashed again. The same bytes either way (test/plugin/access/hmac-key.test.ts).
 */
export function hmacOnceByKeyDigest (hashName: HmacHash, key: string, keyDigest: string, message: string, into: Buffer = Buffer.alloc(DIGEST_LENGTH[hashName])): Buffer {
  const pads = oneOffPads[hashName]
  // More UTF-16 units than a block's bytes: more UTF-8 bytes too. A shorter key is the key itself,
  // and a digest of the wrong length is not the key's: the key is hashed here as by hmacOnce.
  if (key.length <= BLOCK || pads.inner.write(keyDigest, 'base64url') !== DIGEST_LENGTH[hashName]) writePads(pads, key)
  else xorPads(pads, DIGEST_LENGTH[hashName])
  return macOf(pads, message, into)
}
