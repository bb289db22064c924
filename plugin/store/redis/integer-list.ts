import { writeDecimal, writePadded } from './decimal.ts'

/**
 * One script argument of the nonce batch (nonces.ts): a list of integers as decimal text, spaces
 * between, written digit by digit into bytes it keeps and reuses. A turn's nonces make no string,
 * number object or BigInt each (a nonce's 64-bit keyed hash as a BigInt cost four, and its text
 * one more): the list's one string is made when the call is sent.
 */
export class IntegerList {
  #bytes = Buffer.allocUnsafe(256)
  #length = 0

  /** Adds a number as `String` writes it (a key's index, a lifetime, a limit: whole numbers, written digit by digit). */
  add (value: number): void {
    if (!(Number.isSafeInteger(value) && value >= 0)) return this.#addText(String(value))
    this.#room(16)
    this.#separate()
    this.#length = writeDecimal(this.#bytes, this.#length, value)
  }

  /**
   * Adds the signed 64-bit integer whose two's complement is `high` · 2³² + `low` (two unsigned
   * 32-bit words), as `BigInt.asIntN(64, …)` would write it, in doubles: its magnitude is split
   * around 10⁶ so that no step leaves a double's exact range (2⁵³).
   */
  addSigned64 (high: number, low: number): void {
    this.#room(21)
    this.#separate()
    if (high >= 0x80000000) {
      this.#bytes[this.#length++] = 0x2d // '-'
      // The magnitude: the words' two's complement (2⁶⁴ less the value).
      low = (~low + 1) >>> 0
      high = (~high + (low === 0 ? 1 : 0)) >>> 0
    }
    const highUpper = Math.floor(high / 1e6)
    const middle = (high - highUpper * 1e6) * 0x100000000 + low
    const middleUpper = Math.floor(middle / 1e6)
    const lastSix = middle - middleUpper * 1e6
    const upper = highUpper * 0x100000000 + middleUpper
    if (upper === 0) {
      this.#length = writeDecimal(this.#bytes, this.#length, lastSix)
      return
    }
    this.#length = writePadded(this.#bytes, writeDecimal(this.#bytes, this.#length, upper), lastSix, 6)
  }

  /** The text so far, and the list emptied for the next call (its bytes kept). */
  take (): string {
    const text = this.#bytes.toString('latin1', 0, this.#length)
    this.#length = 0
    return text
  }

  #addText (text: string): void {
    this.#room(text.length + 1)
    this.#separate()
    this.#length += this.#bytes.write(text, this.#length, 'latin1')
  }

  #separate (): void {
    if (this.#length > 0) this.#bytes[this.#length++] = 0x20
  }

  /** Room for `more` bytes: a turn of a few thousand nonces grows it a few times, once. */
  #room (more: number): void {
    if (this.#length + more <= this.#bytes.length) return
    const larger = Buffer.allocUnsafe(2 * (this.#length + more))
    this.#bytes.copy(larger, 0, 0, this.#length)
    this.#bytes = larger
  }
}
