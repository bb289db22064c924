import { randomInt } from 'node:crypto'
import { hashSecret } from '../../access/credentials.ts'

/**
 * RFC 8628 §6.1's alphabet: consonants only (no word can be spelled, no vowel to mistake) and no
 * digits (no 0/O, 1/I look-alikes): 20 letters, so 8 of them are 20^8 ≈ 2.56·10^10 codes (34.6 bits).
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'
const LENGTH = 8
const USER_CODE = new RegExp(`^[${USER_CODE_ALPHABET}]{${LENGTH}}$`)

/** A fresh user code, without its dash. */
export function newUserCode (): string {
  let code = ''
  for (let i = 0; i < LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]
  return code
}

/** As the device shows it and the page prefills it: `XXXX-XXXX`. */
export function displayUserCode (code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`
}

/**
 * What a person typed, as the code it names: case, dashes and spaces do not count; undefined when
 * it cannot be a code at all (which the page still counts as a wrong guess).
 */
export function normalUserCode (typed: string): string | undefined {
  const code = typed.replace(/[\s-]/g, '').toUpperCase()
  return USER_CODE.test(code) ? code : undefined
}

/** What the store keeps instead of the code: a user code is a secret for its lifetime. */
export function userCodeHash (code: string): string {
  return hashSecret(`user code ${code}`)
}
