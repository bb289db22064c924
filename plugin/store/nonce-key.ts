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

/** Makes the `NonceUse` of a verified request under one server secret. */
export class NonceKeys {
  readonly #prefix: string

  constructor (secret: string) {
    // The secret is the same for every input, and a token hash (hex) holds no newline: the parts cannot run into each other.
    this.#prefix = `macgate nonce\n${secret}\n`
  }

  /**
   * A token's part of every nonce key's input (secret, token hash), joined once per cached token
   * (token-cache.ts): a request then adds only its nonce, one string where a template made three.
   */
  tokenPart (tokenHash: string): string {
    return `${this.#prefix}${tokenHash}\n`
  }

  use (tokenPart: string, nonce: string, minute: number, ttlSeconds: number): NonceUse {
    return { key: hash('sha256', tokenPart + nonce, 'binary'), minute, ttlSeconds }
  }
}

/** The key's byte at `at`. */
export function keyByte (key: string, at: number): number {
  return key.charCodeAt(at)
}

/** The unsigned 32-bit little-endian word of the key's four bytes from `at`. */
export function keyWord (key: string, at: number): number {
  return (key.charCodeAt(at) | key.charCodeAt(at + 1) << 8 | key.charCodeAt(at + 2) << 16 | key.charCodeAt(at + 3) << 24) >>> 0
}
