/**
 * Whether `length` characters of `a` from `aStart` are those of `b` from `bStart`, in constant time:
 * every character is read whatever differs, and the answer is one OR of their XORs, so no branch or
 * early exit depends on the contents (timingSafeEqual's contract, without two Buffers made per
 * call). The caller keeps both ranges inside their strings.
 */
export function sameCharactersAt (a: string, aStart: number, b: string, bStart: number, length: number): boolean {
  let difference = 0
  for (let i = 0; i < length; i++) difference |= a.charCodeAt(aStart + i) ^ b.charCodeAt(bStart + i)
  return difference === 0
}

/** Two texts compared in constant time (as `sameCharactersAt`). Only the length can leak: a mac's or a hash's is public anyway. */
export function constantTimeEqual (expected: string, given: string): boolean {
  return expected.length === given.length && sameCharactersAt(expected, 0, given, 0, expected.length)
}
