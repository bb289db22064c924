import { hash } from 'node:crypto'

/**
 * What the stores keep of a used nonce: 8 bytes (64 bits) of a keyed hash of the token hash and the
 * nonce, under the server secret. Nobody without the secret can aim two (token, nonce) pairs at
 * one value; a chance collision only makes a fresh request look replayed (CONTRACT §6, "Replay
 * memory"). The hash is SHA-256 over secret ‖ token hash ‖ nonce, truncated: one hash call
 * (~0.8 µs, a third of an HMAC's), and a secret-prefix hash is a sound keyed hash here because
 * its outputs never leave the stores (no length extension without an output to extend).
 */
export const NONCE_KEY_BYTES = 8

/** One nonce to record, as the verifier hands it to `Store.useNonce`. */
export interface NonceUse {
  /**
   * The keyed hash of (token hash, nonce), whole (32 bytes), as a latin1 ('binary') string: one character a
   * byte (`keyByte` and `keyWord` read it). A string, not a Buffer: hashing into one
   * costs about half the time and 180 fewer heap bytes, on every verified request. The first
   * `NONCE_KEY_BYTES` are what is kept and compared. Two bytes past them spread the Redis store's
   * sets: the first picks a nonce's set among its tag's 256, the low four bits of the second its
   * slot tag (16).
   */
  key: string
  /** The nonce's minute (its `M`): the bucket it is kept in. */
  minute: number
  /** Seconds until that minute leaves the freshness window: the bucket's lifetime. */
  ttlSeconds: number
}

/**
 * Room for a key's input past the prefix: a token hash and a nonce (R of at most 64 characters,
 * `:`, M) take some 120 bytes; a longer input (the header is bounded at 4 KiB, not R) is joined
 * as text instead.
 */
const INPUT_ROOM = 1024

/**
 * Makes the `NonceUse` of a verified request under one server secret. The input (secret prefix,
 * token hash, nonce) is written into one buffer of its own, the prefix once, and a view of it
 * kept for each length met (at most one per byte: bounded), so that a key makes no string or
 * view for its input: the text joined and hashed made about 200 heap bytes more a request
 * (bench/HISTORY.md). The bytes are the same either way (test/plugin/store/nonce-key.test.ts), so
 * instances of either build remember each other's nonces.
 */
export class NonceKeys {
  readonly #prefix: string
  readonly #input: Buffer
  readonly #prefixLength: number
  readonly #views: Buffer[] = []

  constructor (secret: string) {
    // The secret is the same for every input, and a token hash (base64url) holds no newline: the parts cannot run into each other.
    this.#prefix = `macgate nonce\n${secret}\n`
    this.#input = Buffer.allocUnsafeSlow(Buffer.byteLength(this.#prefix) + INPUT_ROOM)
    this.#prefixLength = this.#input.write(this.#prefix, 0, 'utf8')
  }

  /** `tokenHash`: the token's hash as the stores key it (`hashSecret`, base64url: ASCII, one byte a character). */
  use (tokenHash: string, nonce: string, minute: number, ttlSeconds: number): NonceUse {
    return { key: this.#keyOf(tokenHash, nonce), minute, ttlSeconds }
  }

  #keyOf (tokenHash: string, nonce: string): string {
    // UTF-8 takes at most 3 bytes for a UTF-16 unit.
    if ((tokenHash.length + 1 + nonce.length) * 3 > INPUT_ROOM) return hash('sha256', `${this.#prefix}${tokenHash}\n${nonce}`, 'binary')
    const input = this.#input
    let at = this.#prefixLength + input.write(tokenHash, this.#prefixLength, 'latin1')
    input[at++] = 0x0a
    at = writeUtf8(input, at, nonce)
    const view = this.#views[at] ??= input.subarray(0, at)
    return hash('sha256', view, 'binary')
  }
}

/**
 * `text` as UTF-8 from `at`, and where it ends: an ASCII text (a nonce's usual R, and M) byte by
 * byte here, which costs less than a call into Buffer's encoder for so few; from its first other
 * character on, by that encoder (which writes a lone surrogate as U+FFFD, as hashing the text does).
 */
function writeUtf8 (bytes: Buffer, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code >= 0x80) return at + bytes.write(i === 0 ? text : text.slice(i), at, 'utf8')
    bytes[at++] = code
  }
  return at
}

/** The key's byte at `at`. */
export function keyByte (key: string, at: number): number {
  return key.charCodeAt(at)
}

/** The unsigned 32-bit little-endian word of the key's four bytes from `at`. */
export function keyWord (key: string, at: number): number {
  return (key.charCodeAt(at) | key.charCodeAt(at + 1) << 8 | key.charCodeAt(at + 2) << 16 | key.charCodeAt(at + 3) << 24) >>> 0
}
