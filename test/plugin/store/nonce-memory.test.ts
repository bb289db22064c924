// What a held nonce costs the embedded store: 5,000,000 nonces, measured as the process's resident
// memory and as heap plus typed arrays (not a timing).
import { randomFillSync } from 'node:crypto'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { MemoryStore } from '../../../plugin/store/memory/memory-store.ts'
import type { NonceUse } from '../../../plugin/store/store.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

function memory (): { rss: number, tables: number } {
  gc()
  gc()
  const { rss, heapUsed, arrayBuffers } = process.memoryUsage()
  return { rss, tables: heapUsed + arrayBuffers }
}

t.test('5,000,000 held nonces over five minutes take at most 24 bytes each of RSS', async (t) => {
  const count = 5_000_000
  const store = new MemoryStore()
  t.teardown(async () => { await store.close() })
  // Keys drawn in blocks: one buffer reused, so that only the store's own memory grows.
  const block = Buffer.alloc(16 * 4096)
  const use: NonceUse = { key: '', minute: 0, ttlSeconds: 600 }
  // The loop's own garbage (a key string each) grows V8's young generation to its working size, by
  // how busy the machine is: grown before the first reading, so that only the store's growth counts.
  let churn = 0
  for (let i = 0; i < count; i++) churn += block.toString('latin1', i % 4096, i % 4096 + 16).length
  t.equal(churn, 16 * count, 'the churn ran')
  const before = memory()
  let fresh = 0
  for (let i = 0; i < count; i++) {
    const at = i % 4096
    if (at === 0) randomFillSync(block)
    use.key = block.toString('latin1', at * 16, at * 16 + 16)
    use.minute = 29_000_000 + Math.floor(i / (count / 5))
    if (store.useNonce(use)) fresh++
  }
  const after = memory()
  const stats = await store.nonceStats()
  t.equal(fresh, count, 'every one fresh (random 64-bit keys: a collision among 5,000,000 has odds of 1 in 1.5 million)')
  t.equal(stats.held, count, 'all held')
  const rss = (after.rss - before.rss) / count
  const tables = (after.tables - before.tables) / count
  t.comment(`${count} nonces: RSS grew ${((after.rss - before.rss) / 2 ** 20).toFixed(0)} MiB, ${rss.toFixed(1)} bytes each; heap and typed arrays ${tables.toFixed(1)}; the store's estimate ${(stats.bytes / count).toFixed(1)}`)
  t.ok(rss <= 24, `${rss.toFixed(1)} bytes of RSS a nonce, at most 24`)
  t.ok(Math.abs(stats.bytes - (after.tables - before.tables)) < stats.bytes * 0.05, 'the bytes estimate is what the tables take')
})
