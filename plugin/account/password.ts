import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'

/** scrypt's cost: N (a power of two), r and p. Stored with each hash, so that it can change later. */
export interface ScryptCost {
  N: number
  r: number
  p: number
}

/** N=2^15, r=8: 32 MiB and tens of milliseconds per guess. */
export const PASSWORD_COST: Readonly<ScryptCost> = { N: 2 ** 15, r: 8, p: 1 }
/** The most memory one derivation may take, also for a hash stored with a higher cost. */
const MAX_MEMORY = 64 * 1024 * 1024
const KEY_LENGTH = 32

function derive (password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, { ...options, maxmem: MAX_MEMORY }, (error, key) => error ? reject(error) : resolve(key))
  })
}

/** `scrypt$N$r$p$salt$key`, so that the cost can be raised later without breaking old hashes. */
export async function hashPassword (password: string, { N, r, p }: ScryptCost = PASSWORD_COST): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, { N, r, p })
  return ['scrypt', N, r, p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

// Checked against when the user does not exist, so that timing does not tell which names exist.
// Made when the sign-in routes are set up, not at import: a CLI command that checks no password
// pays nothing for it.
let decoy: Promise<string> | undefined

/** The decoy hash, made once per process; started early, the first unknown name costs what any other does. */
export function decoyHash (): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'))
  return decoy
}

export async function verifyPassword (password: string, stored: string | undefined): Promise<boolean> {
  const [scheme, N, r, p, salt, key] = (stored ?? await decoyHash()).split('$')
  if (scheme !== 'scrypt' || key === undefined || salt === undefined) return false
  const expected = Buffer.from(key, 'base64url')
  const actual = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(N), r: Number(r), p: Number(p) })
  return expected.length === KEY_LENGTH && timingSafeEqual(actual, expected) && stored !== undefined
}
