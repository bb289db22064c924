// What the seeded fuzzers (test/fuzz.test.ts, test/gateway/open-api/flood.test.ts) draw from: one generator, and
// the malformed pieces both send (bad escapes, control characters) and the constants they judge by.
import { REDIRECT_URI } from './app.ts'
import { seeded } from './seeded.ts'

/** Draws from `seed`, the same every run: a number in [0, 1), an integer below n, an item, a coin. */
export function generator (seed: number) {
  const next = seeded(seed)
  const int = (n: number): number => Math.floor(next() * n)
  const pick = <T>(list: readonly T[]): T => list[int(list.length)]!
  const chance = (p: number): boolean => next() < p
  return { next, int, pick, chance }
}
export type Gen = ReturnType<typeof generator>

export const enc = encodeURIComponent

/** The component percent-decoded, or `fallback` when it does not decode. */
export function decodedOr (component: string, fallback: string): string {
  try {
    return decodeURIComponent(component)
  } catch {
    return fallback
  }
}

/** Escapes of bytes that are not UTF-8. */
export const INVALID_UTF8 = ['%FF', '%C3%28', '%ED%A0%80']
/** Escapes that are not escapes. */
export const BROKEN_ESCAPES = ['%zz', '%', '%4', '%%41']
/** Control characters, raw and escaped, and an escaped header injection. */
export const CONTROLS = ['%00', '%01%1F', '%7F', '%01%1F%7F', '\x01', '\x7f', '%09', '%0A', '%00%00%00', '%0D%0ALocation:%20https://evil.example', 'a%0D%0ALocation:%20https://evil.example']

/** What every token endpoint answer starts with (the contract's JSON prefix). */
export const PREFIX = '&&&START&&&'
export const FORM = 'application/x-www-form-urlencoded'
/** The only origin a redirect may go to: the test client's. */
export const REGISTERED_ORIGIN = new URL(REDIRECT_URI).origin
