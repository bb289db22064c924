import t from 'tap'
import { NonceSet } from '../plugin/store/nonce-set.js'

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

t.test('a nonce is accepted once while live, again once expired, and swept from the old end', async (t) => {
  const nonces = new NonceSet(50)
  t.teardown(() => nonces.close())
  t.equal(nonces.add('a', 1), true)
  t.equal(nonces.add('a', 1), false, 'a replay within the ttl')
  t.equal(nonces.add('b', 60), true, 'another key')
  await sleep(1100)
  t.equal(nonces.size, 1, 'the expired key was swept, the live one kept')
  t.equal(nonces.add('a', 1), true, 'accepted again after its ttl')
  t.equal(nonces.add('b', 60), false, 'the live key still refuses a replay')
})

t.test('an expired key not yet swept is accepted again and moves to the young end', async (t) => {
  const nonces = new NonceSet(60_000)
  t.teardown(() => nonces.close())
  t.equal(nonces.add('old', 1), true)
  t.equal(nonces.add('young', 60), true)
  await sleep(1100)
  t.equal(nonces.add('old', 60), true, 'expired, so fresh again')
  t.equal(nonces.add('old', 60), false)
  t.equal(nonces.size, 2)
})
