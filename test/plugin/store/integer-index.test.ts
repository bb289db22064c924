// The nonce batch's index of a turn's sets: read and written as a Map would be, emptied for the
// next turn without a trace of the last (through its growth and the stamps' wrap-around).
import t from 'tap'
import { IntegerIndex } from '../../../plugin/store/redis/integer-index.ts'

/** Set ids as the nonce batch makes them: (minute modulo 4096) × 4096 + (tag × 256 + set). */
function setIds (count: number, minute: number): number[] {
  return Array.from({ length: count }, (_, i) => (minute % 4096) * 4096 + ((i * 37) % 4096))
}

t.test('answers as a Map does: 0 for a key it has not, the last value set for one it has', async (t) => {
  const index = new IntegerIndex()
  const map = new Map<number, number>()
  t.equal(index.get(5), 0, 'empty: nothing found')
  const keys = [0, 1, 2 ** 31 - 1, 4096, 8192, ...setIds(20, 29_000_000)]
  keys.forEach((key, i) => {
    index.set(key, i + 1)
    map.set(key, i + 1)
  })
  index.set(4096, 99)
  map.set(4096, 99)
  t.same(keys.map((key) => index.get(key)), keys.map((key) => map.get(key)), 'every key read back')
  t.equal(index.size, map.size, 'one entry a key')
  t.equal(index.get(12_345), 0, 'a key never set')
})

t.test('grows past its first room, keeping what it holds', async (t) => {
  const index = new IntegerIndex()
  const keys = setIds(4096, 7)
  keys.forEach((key, i) => { index.set(key, i + 1) })
  t.equal(index.size, 4096)
  t.same(keys.filter((key, i) => index.get(key) !== i + 1), [], '4,096 keys (64 times its first room) all found')
})

t.test('emptied: nothing of the last use is found, and it fills again', async (t) => {
  const index = new IntegerIndex()
  const once = 424_242
  index.set(once, 1)
  index.clear()
  for (let use = 1; use < 70_000; use++) {
    // Past 65,535 uses the stamps wrap round: the entry of the first use must not come back.
    if (index.get(once) !== 0) t.fail(`use ${use}: the first use's key found`)
    // Two keys in every later use, so that the first use's slot keeps its old stamp.
    const key = use % 2
    if (index.get(key) !== 0) t.fail(`use ${use}: key ${key} found from an earlier use`)
    index.set(key, use)
    if (index.get(key) !== use) t.fail(`use ${use}: key ${key} not found`)
    index.clear()
    if (index.size !== 0) t.fail('not empty')
  }
  t.pass('70,000 uses, each starting empty')
})
