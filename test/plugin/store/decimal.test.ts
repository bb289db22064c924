// Whole numbers written as digits into bytes: the same text as String, at every width and across
// the split at 2³¹ and up to the largest safe integer.
import t from 'tap'
import { decimalWidth, writeDecimal, writePadded } from '../../../plugin/store/redis/decimal.ts'

t.test('writeDecimal and decimalWidth: String\'s digits, at an offset, the position after them', async (t) => {
  const values = [0, 1, 9, 10, 99, 100, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, 9_999_999, 10_000_000, 1e15, 2 ** 32 * 1e6 + 5, Number.MAX_SAFE_INTEGER]
  for (let power = 1; power < 1e16; power *= 10) values.push(power - 1, power, power + 1)
  for (let i = 0; i < 2000; i++) values.push(Math.floor(Math.random() * Number.MAX_SAFE_INTEGER), Math.floor(Math.random() * 2 ** 32))
  const bytes = Buffer.alloc(40)
  let wrong = 0
  for (const value of values) {
    const text = String(value)
    const end = writeDecimal(bytes, 3, value)
    const written = bytes.toString('latin1', 3, end)
    if (written !== text || decimalWidth(value) !== text.length) {
      wrong++
      t.equal(written, text, `${value}: written`)
      t.equal(decimalWidth(value), text.length, `${value}: its width`)
    }
  }
  t.equal(wrong, 0, `${values.length} values, each as String writes it`)
})

t.test('writePadded: zeros first, to the width', async (t) => {
  const bytes = Buffer.alloc(10)
  t.equal(writePadded(bytes, 1, 42, 6), 7)
  t.equal(bytes.toString('latin1', 1, 7), '000042')
  t.equal(writePadded(bytes, 0, 0, 1), 1)
  t.equal(bytes.toString('latin1', 0, 1), '0')
})
