// The embedded store's replay memory on its own clock: minute buckets of 64-bit keyed hashes, each
// dropped whole when its minute leaves the window, and a ceiling that refuses only when truly full.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { NonceBuckets } from '../../../plugin/store/memory/nonce-buckets.ts'
import { MemoryStore } from '../../../plugin/store/memory/memory-store.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { nonceUse } from '../../helpers/store-suite.ts'

const START = 1_700_000_000_000

/** A keyed hash's first 8 bytes as the verifier hands them (a latin1 string, `nonce-key.ts`): these two words. */
const key = (high: number, low: number): string => {
  const buffer = Buffer.alloc(8)
  buffer.writeUInt32LE(high, 0)
  buffer.writeUInt32LE(low, 4)
  return buffer.toString('latin1')
}

t.test('a key is fresh once per minute\'s bucket; the bucket goes whole when its minute leaves the window', async (t) => {
  const clock = steppedClock(START)
  const nonces = new NonceBuckets({ clock: clock.now })
  t.equal(nonces.add(key(1, 2), 100, 360), true, 'fresh')
  t.equal(nonces.add(key(1, 2), 100, 360), false, 'replayed')
  t.equal(nonces.add(key(1, 2), 101, 420), true, 'the same key in the next minute is another nonce')
  t.equal(nonces.add(key(2, 1), 100, 360), true, 'the words are not interchangeable')
  t.equal(nonces.size, 3)
  clock.step(359_000)
  t.equal(nonces.add(key(1, 2), 100, 1), false, 'the last second before the minute leaves the window: still refused')
  clock.step(1000)
  t.equal(nonces.size, 1, 'minute 100\'s bucket dropped, minute 101\'s kept')
  t.equal(nonces.add(key(1, 2), 101, 60), false, 'the later bucket still refuses its replay')
  t.equal(nonces.add(key(1, 2), 100, 60), true, 'a new bucket for minute 100 (the verifier refuses it as stale by now)')
  clock.step(60_000)
  t.equal(nonces.size, 0, 'both gone')
  t.equal(nonces.bytes, 0, 'and their tables')
})

t.test('a minute is kept as long as the longest lifetime asked for it', async (t) => {
  const clock = steppedClock(START)
  const nonces = new NonceBuckets({ clock: clock.now })
  t.equal(nonces.add(key(1, 1), 100, 60), true)
  t.equal(nonces.add(key(1, 2), 100, 120), true, 'a verifier with a wider skew keeps minute 100 longer')
  t.equal(nonces.add(key(1, 3), 101, 60), true)
  t.equal(nonces.add(key(1, 4), 100, 30), true, 'a shorter lifetime does not shorten it')
  clock.step(90_000)
  t.equal(nonces.add(key(1, 1), 100, 30), false, 'past the first lifetime, still held')
  t.equal(nonces.size, 3, 'minute 100\'s three held, minute 101 gone')
  clock.step(30_000)
  t.equal(nonces.size, 0, 'gone after the longest')
})

t.test('the rollover: each minute its own bucket, dropped in turn, the held count following', async (t) => {
  const clock = steppedClock(START)
  const nonces = new NonceBuckets({ clock: clock.now })
  // Six minutes of traffic, 1,000 nonces a minute, each minute kept until 6 minutes after it began.
  for (let minute = 0; minute < 12; minute++) {
    let fresh = 0
    for (let i = 1; i <= 1000; i++) if (nonces.add(key(minute + 1, i), minute, 360)) fresh++
    t.equal(fresh, 1000, `minute ${minute}: every nonce fresh`)
    t.equal(nonces.size, Math.min(minute + 1, 6) * 1000, `minute ${minute}: ${Math.min(minute + 1, 6)} buckets held`)
    clock.step(60_000)
  }
})

t.test('growing tables keep every key: no false fresh, no false replay', async (t) => {
  const nonces = new NonceBuckets()
  const keys = Array.from({ length: 100_000 }, () => randomBytes(8).toString('latin1'))
  let fresh = 0
  for (const one of keys) if (nonces.add(one, 7, 60)) fresh++
  t.equal(fresh, new Set(keys).size, 'every distinct key fresh once')
  t.ok(keys.every((one) => !nonces.add(one, 7, 60)), 'every key a replay after the table grew')
  t.ok(nonces.bytes <= 100_000 * 21.4, `${nonces.bytes} bytes of table for 100,000: at most 21 a key`)
  t.ok(nonces.bytes >= 100_000 * 8 / 0.75, 'never fuller than 3/4')
})

t.test('the all-zero key (an empty place\'s mark) is kept like any other', async (t) => {
  const nonces = new NonceBuckets()
  t.equal(nonces.add(key(0, 0), 1, 60), true)
  t.equal(nonces.add(key(0, 0), 1, 60), false)
  t.equal(nonces.add(key(0, 1), 1, 60), false, 'it shares 0:1 (one key in 2^64 twice)')
  t.equal(nonces.add(key(0, 2), 1, 60), true)
  t.equal(nonces.add(key(5, 0), 1, 60), true, 'a zero low word alone is a key')
  t.equal(nonces.add(key(5, 0), 1, 60), false)
})

t.test('the ceiling refuses 503 96000 only while every place holds a live nonce', async (t) => {
  const clock = steppedClock(START)
  const store = new MemoryStore({ maxNonces: 3, clock: clock.now })
  t.teardown(async () => { await store.close() })
  const minute = 5
  t.equal(store.useNonce(nonceUse('a'.repeat(64), '1:5', { minute, ttlSeconds: 60 })), true)
  t.equal(store.useNonce(nonceUse('a'.repeat(64), '2:5', { minute, ttlSeconds: 60 })), true)
  t.equal(store.useNonce(nonceUse('a'.repeat(64), '3:6', { minute: minute + 1, ttlSeconds: 120 })), true, 'the third fills it')
  t.throws(() => store.useNonce(nonceUse('a'.repeat(64), '4:6', { minute: minute + 1, ttlSeconds: 120 })), { errno: 96000, statusCode: 503, message: 'nonce store is full; try again shortly' })
  t.same(await store.nonceStats(), { held: 3, bytes: 2 * 64 * 64 * 8 }, 'three held in two buckets of minimal tables')
  clock.step(60_000)
  t.equal(store.useNonce(nonceUse('a'.repeat(64), '4:6', { minute: minute + 1, ttlSeconds: 60 })), true, 'minute 5 left the window: room for two again')
  t.equal(store.useNonce(nonceUse('a'.repeat(64), '5:6', { minute: minute + 1, ttlSeconds: 60 })), true)
  t.throws(() => store.useNonce(nonceUse('a'.repeat(64), '6:6', { minute: minute + 1, ttlSeconds: 60 })), { errno: 96000, message: 'nonce store is full; try again shortly' }, 'full again')
  t.equal((await store.nonceStats()).held, 3)
})
