// The nonce script's integer arguments: written digit by digit, read back as the texts `String`
// and BigInt write, a nonce key's 64-bit integer signed as Node reads it from a Buffer.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { IntegerList } from '../../../plugin/store/redis/integer-list.ts'

t.test('a nonce key\'s two words written as the signed 64-bit integer Node reads from its bytes', async (t) => {
  const edges = ['0000000000000000', 'ffffffffffffffff', '0000000000000080', 'ffffffffffffff7f', '0100000000000080',
    'ffffffff00000000', '00000000ffffffff', '0000000001000000', '40420f0000000000', '3f420f0000000000', '00a0724e18090000']
  const keys = [...edges.map((hex) => Buffer.from(hex, 'hex')), ...Array.from({ length: 5000 }, () => randomBytes(8))]
  const list = new IntegerList()
  for (const bytes of keys) list.addSigned64(bytes.readUInt32LE(4), bytes.readUInt32LE(0))
  const written = list.take().split(' ')
  const wrong = keys.filter((bytes, i) => written[i] !== bytes.readBigInt64LE(0).toString())
  t.same(wrong.map((bytes) => bytes.toString('hex')), [], `${keys.length} keys, the extremes among them, written alike`)
  t.equal(written.length, keys.length, 'one integer each, a space between (the list grew past its first bytes)')
})

t.test('numbers as String writes them; the list empties when taken', async (t) => {
  const list = new IntegerList()
  t.equal(list.take(), '', 'an empty list is an empty text')
  const numbers = [0, 1, 9, 10, 99, 100, 120, 4096, 1_000_000_000, 2 ** 31, 2 ** 31 - 1, 2 ** 32, 2 ** 48, 10_000_000_000_000, 2 ** 53 - 1, 2 ** 53, 1e21, -3, 1.5]
  for (const number of numbers) list.add(number)
  t.equal(list.take(), numbers.map(String).join(' '))
  t.equal(list.take(), '', 'taken, it starts again')
  list.add(7)
  list.addSigned64(0xffffffff, 0xffffffff)
  t.equal(list.take(), '7 -1', 'nothing of the last call left')
})
