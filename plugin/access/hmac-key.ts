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

/** Where the outer hash's input is made, one per hash (its length): the outer pad, then the inner digest. */
const outerRooms: Record<HmacHash, Buffer> = {
  sha1: Buffer.allocUnsafeSlow(BLOCK + DIGEST_LENGTH.sha1),
  sha256: Buffer.allocUnsafeSlow(BLOCK + DIGEST_LENGTH.sha256)
}

/** Where a key's pads are worked out, reused: the inner pad, then the outer pad. */
const padRoom = Buffer.allocUnsafeSlow(2 * BLOCK)

/**
 * A prepared key's pads as latin1 text, one character a byte. Text, not buffers: a token cache miss
 * prepares a key, kept in old space while the token is cached, and a buffer of its own would be
 * an ArrayBuffer (memory outside V8's heap, with its own bookkeeping for the collector) and two
 * views of it; text is one object each on V8's heap, and about three times cheaper to make.
 */
interface Pads {
  readonly inner: string
  readonly outer: string
}

/** The key's bytes into `padRoom`'s inner pad; a key longer than a block is replaced by its digest (RFC 2104). */
function writeKey (hashName: HmacHash, key: string | Buffer): void {
  const long = typeof key === 'string' ? Buffer.byteLength(key, 'utf8') > BLOCK : key.length > BLOCK
  // Written as text, no Buffer made for it: the key's UTF-8 bytes, or its digest one character a byte.
  const length = long
    ? padRoom.write(hash(hashName, key, 'binary'), 0, BLOCK, 'latin1')
    : typeof key === 'string' ? padRoom.write(key, 0, BLOCK, 'utf8') : key.copy(padRoom, 0, 0, BLOCK)
  xorPads(length)
}

/** The key's `length` bytes at `padRoom`'s start, zero-filled to a block, XORed into both pads. */
function xorPads (length: number): void {
  padRoom.fill(0, length, BLOCK)
  for (let i = 0; i < BLOCK; i++) {
    const byte = padRoom[i]!
    padRoom[i] = byte ^ 0x36
    padRoom[BLOCK + i] = byte ^ 0x5c
  }
}

/**
 * HMAC(key, utf8(message)) under `pads`, or under the pads in `padRoom` (a key used once): as text,
 * or written into `into` (the digest's length: a buffer made by `crypto.hash` costs more than the hash).
 */
function macOf (hashName: HmacHash, pads: Pads | undefined, message: string, encoding: 'base64' | 'base64url'): string
function macOf (hashName: HmacHash, pads: Pads | undefined, message: string, into: Buffer): Buffer
function macOf (hashName: HmacHash, pads: Pads | undefined, message: string, encoding: 'base64' | 'base64url' | Buffer): string | Buffer {
  // UTF-8 takes at most 3 bytes for a UTF-16 unit: beyond that, measure.
  const room = message.length * 3 <= scratch.length - BLOCK ? scratch : Buffer.allocUnsafe(BLOCK + Buffer.byteLength(message, 'utf8'))
  if (pads === undefined) padRoom.copy(room, 0, 0, BLOCK)
  else room.write(pads.inner, 0, BLOCK, 'latin1')
  const length = BLOCK + room.write(message, BLOCK, 'utf8')
  const input = room === scratch ? (scratchViews[length] ??= scratch.subarray(0, length)) : room
  const outer = outerRooms[hashName]
  if (pads === undefined) padRoom.copy(outer, 0, BLOCK, 2 * BLOCK)
  else outer.write(pads.outer, 0, BLOCK, 'latin1')
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
  readonly #hashName: HmacHash
  readonly #pads: Pads

  /** `key` as bytes, or as text to be UTF-8 encoded (a mac_key, the server secret). */
  constructor (hashName: HmacHash, key: string | Buffer) {
    this.#hashName = hashName
    writeKey(hashName, key)
    this.#pads = { inner: padRoom.toString('latin1', 0, BLOCK), outer: padRoom.toString('latin1', BLOCK, 2 * BLOCK) }
  }

  /** HMAC(key, utf8(message)), as text. */
  digest (message: string, encoding: 'base64' | 'base64url'): string {
    return macOf(this.#hashName, this.#pads, message, encoding)
  }
}

/**
 * HMAC(key, utf8(message)) under a key used once: no object of its own, its pads worked out in the
 * shared room; the answer written into `into` when given (of the digest's length; the caller's,
 * used at once: a cipher's key), else into a buffer of its own.
 */
export function hmacOnce (hashName: HmacHash, key: string | Buffer, message: string, into: Buffer = Buffer.alloc(DIGEST_LENGTH[hashName])): Buffer {
  writeKey(hashName, key)
  return macOf(hashName, undefined, message, into)
}

/**
 * `hmacOnce(hashName, key, message)` for a caller that holds the key's digest already (`keyDigest`:
 * `hash(hashName, key, 'base64url')`, e.g. a token's hash as the store keys it): a key longer than
 * a block is replaced by that digest (RFC 2104), so it is written into the pads as it is, not
 * hashed again. The same bytes either way (test/plugin/access/hmac-key.test.ts).
 */
export function hmacOnceByKeyDigest (hashName: HmacHash, key: string, keyDigest: string, message: string, into: Buffer = Buffer.alloc(DIGEST_LENGTH[hashName])): Buffer {
  // More UTF-16 units than a block's bytes: more UTF-8 bytes too. A shorter key is the key itself,
  // and a digest of the wrong length is not the key's: the key is hashed here as by hmacOnce.
  if (key.length <= BLOCK || padRoom.write(keyDigest, 0, BLOCK, 'base64url') !== DIGEST_LENGTH[hashName]) writeKey(hashName, key)
  else xorPads(DIGEST_LENGTH[hashName])
  return macOf(hashName, undefined, message, into)
}
