/**
 * Whole numbers written as decimal digits straight into bytes, with no string made: the nonce
 * batch's integer lists (integer-list.ts) and the lengths of a written command (written-command.ts).
 * Below 2³¹ the division is an integer's (`| 0`), not a double's; larger safe integers are written
 * in parts, seven digits under the first.
 */

/** How many digits a safe integer ≥ 0 takes. */
export function decimalWidth (value: number): number {
  if (value >= 0x80000000) return 7 + decimalWidth(Math.floor(value / 1e7))
  let width = 1
  for (let rest = value; rest >= 10; rest = (rest / 10) | 0) width++
  return width
}

/** Writes a safe integer ≥ 0 at `at`; the position after it. */
export function writeDecimal (bytes: Buffer, at: number, value: number): number {
  if (value >= 0x80000000) {
    const upper = Math.floor(value / 1e7)
    return writePadded(bytes, writeDecimal(bytes, at, upper), value - upper * 1e7, 7)
  }
  return writePadded(bytes, at, value, decimalWidth(value))
}

/** Writes 0 ≤ value < 2³¹ at `at` in `width` digits, zeros first; the position after them. */
export function writePadded (bytes: Buffer, at: number, value: number, width: number): number {
  let rest = value
  for (let i = at + width - 1; i >= at; i--) {
    const next = (rest / 10) | 0
    bytes[i] = 0x30 + rest - next * 10
    rest = next
  }
  return at + width
}
