import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'

// scrypt with N=2^15, r=8: 32 MiB and tens of milliseconds per guess.
const COST = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }
const KEY_LENGTH = 32

function derive (password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (error, key) => error ? reject(error) : resolve(key))
  })
}

/** `scrypt$N$r$p$salt$key`, so that the cost can be raised later without breaking old hashes. */
export async function hashPassword (password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, COST)
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

// Checked against when the user does not exist, so that timing does not tell which names exist.
const decoy = hashPassword(randomBytes(16).toString('hex'))

export async function verifyPassword (password: string, stored: string | undefined): Promise<boolean> {
  const [scheme, N, r, p, salt, key] = (stored ?? await decoy).split('$')
  if (scheme !== 'scrypt' || key === undefined || salt === undefined) return false
  const expected = Buffer.from(key, 'base64url')
  const actual = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(N), r: Number(r), p: Number(p), maxmem: COST.maxmem })
  return expected.length === KEY_LENGTH && timingSafeEqual(actual, expected) && stored !== undefined
}
