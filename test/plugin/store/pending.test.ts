// Pending: how the Redis nonce batch answers each request without a promise. It must behave as a
// promise does for everything the verifier and the hook rely on, and never lose a failure.
import t from 'tap'
import { isThenable, Pending } from '../../../plugin/store/pending.ts'

/** The next uncaught exception, taken from tap's own listeners for that one (which would fail the test). */
async function nextUncaught (): Promise<unknown> {
  return await new Promise<unknown>((resolve) => {
    const listeners = process.listeners('uncaughtException')
    process.removeAllListeners('uncaughtException')
    process.once('uncaughtException', (error) => {
      for (const listener of listeners) process.on('uncaughtException', listener)
      resolve(error)
    })
  })
}

t.test('callbacks run when it settles, in the settler\'s turn; a late then runs at once', async (t) => {
  const pending = new Pending<number>()
  const seen: string[] = []
  pending.then((value) => seen.push(`first ${value}`))
  pending.then((value) => seen.push(`second ${value}`))
  t.same(seen, [], 'nothing before it settles')
  pending.resolve(7)
  t.same(seen, ['first 7', 'second 7'], 'both, synchronously, in order')
  pending.then((value) => seen.push(`late ${value}`))
  t.same(seen, ['first 7', 'second 7', 'late 7'])
  pending.resolve(8)
  pending.reject(new Error('no'))
  t.same(seen, ['first 7', 'second 7', 'late 7'], 'settled once: later settlements are ignored')
})

t.test('chains as a promise does: mapped values, a throw rejects, a rejection passes through', async (t) => {
  const source = new Pending<number>()
  const doubled = source.then((value) => value * 2)
  const refused = doubled.then((value) => { throw new Error(`refused ${value}`) })
  const passed = refused.then((value) => `never ${String(value)}`)
  const recovered = passed.then(undefined, (error: unknown) => `recovered from ${(error as Error).message}`)
  source.resolve(21)
  t.equal(await doubled, 42, 'await takes it as a thenable')
  await t.rejects(Promise.resolve(refused), /refused 42/)
  await t.rejects(Promise.resolve(passed), /refused 42/, 'no rejection callback: the rejection goes on')
  t.equal(await recovered, 'recovered from refused 42')
  const adopted = new Pending<number>()
  const inner = new Pending<string>()
  const outer = adopted.then(() => inner)
  adopted.resolve(1)
  inner.resolve('inner value')
  t.equal(await outer, 'inner value', 'a thenable returned by a callback is followed')
  const failing = new Pending<number>()
  const rejectedInner = failing.then(async () => await Promise.reject(new Error('inner failed')))
  failing.resolve(1)
  await t.rejects(Promise.resolve(rejectedInner), /inner failed/)
})

t.test('a rejection nobody waits for is thrown, as an unhandled rejection would be', async (t) => {
  const thrown = nextUncaught()
  new Pending<number>().reject(new Error('lost?'))
  t.match(await thrown, { message: 'lost?' })
  const waited = new Pending<number>()
  const caught = waited.then(undefined, (error: unknown) => (error as Error).message)
  waited.reject(new Error('handled'))
  t.equal(await caught, 'handled', 'one with a callback is not thrown')
  // `await` calls `then` a microtask late: a rejection from a promise's callback queued before it is not lost to it.
  const late = new Pending<number>()
  void Promise.resolve().then(() => { late.reject(new Error('awaited late')) })
  await t.rejects(async () => await late, /awaited late/, 'awaited a microtask after the rejection: the awaiter\'s, not thrown')
})

t.test('map: the Pending itself, its result the step\'s; a throw rejects, a rejection passes through, once and first only', async (t) => {
  const step = (value: number, argument: { times: number }): number => {
    if (value < 0) throw new Error(`negative ${value}`)
    return value * argument.times
  }
  const source = new Pending<number>()
  const tripled = source.map(step, { times: 3 })
  t.equal(tripled, source as unknown, 'no new Pending')
  source.resolve(7)
  t.equal(await tripled, 21)
  const settled = new Pending<number>()
  settled.resolve(2)
  t.equal(await settled.map(step, { times: 5 }), 10, 'on a settled Pending it runs at once')
  const thrown = new Pending<number>()
  // Waited on before they settle: a rejection nobody waits for by then is thrown (below).
  const refused = t.rejects(Promise.resolve(thrown.map(step, { times: 1 })), /negative -1/)
  thrown.resolve(-1)
  await refused
  const thrownAtOnce = new Pending<number>()
  thrownAtOnce.resolve(-2)
  const seenAtOnce: unknown[] = []
  void thrownAtOnce.map(step, { times: 1 }).then(undefined, (error: unknown) => { seenAtOnce.push(error) })
  t.match(seenAtOnce, [{ message: 'negative -2' }], 'at once too (a waiter in the same turn: nothing thrown)')
  const unwatched = nextUncaught()
  const ignored = new Pending<number>()
  ignored.resolve(-3)
  ignored.map(step, { times: 1 })
  t.match(await unwatched, { message: 'negative -3' }, 'a throw at once that nobody waits for is thrown, as a rejection would be')
  const failed = new Pending<number>()
  const passed = t.rejects(Promise.resolve(failed.map(step, { times: 1 })), /store down/, 'the step is not called for a rejection')
  failed.reject(new Error('store down'))
  await passed
  const waited = new Pending<number>()
  void waited.then(() => {})
  t.throws(() => waited.map(step, { times: 2 }), /mapped once, before anyone waits/, 'not once waited on: its waiter expects the value')
  const twice = new Pending<number>()
  twice.map(step, { times: 2 })
  t.throws(() => twice.map(step, { times: 2 }), /mapped once/, 'nor twice')
  const seen: number[] = []
  const delivered = new Pending<number>()
  delivered.map(step, { times: 4 }).deliver({ fulfilled: (value) => { seen.push(value) }, rejected: () => {} })
  delivered.resolve(5)
  t.same(seen, [20], 'a receiver gets the mapped value')
})

t.test('then callbacks get the value alone, as a promise\'s do', async (t) => {
  const pending = new Pending<number>()
  const seen: unknown[][] = []
  pending.then((...args: unknown[]) => { seen.push(args) })
  pending.resolve(3)
  t.same(seen, [[3]])
})

t.test('deliver: the receiver\'s fulfilled or rejected, once; a throw from it cannot stop the settler', async (t) => {
  const seen: string[] = []
  const receiver = {
    fulfilled: (value: number) => { seen.push(`fulfilled ${value}`) },
    rejected: (reason: unknown) => { seen.push(`rejected ${(reason as Error).message}`) }
  }
  const fulfilled = new Pending<number>()
  fulfilled.deliver(receiver)
  fulfilled.resolve(4)
  fulfilled.resolve(5)
  const rejected = new Pending<number>()
  rejected.deliver(receiver)
  rejected.reject(new Error('replayed'))
  const late = new Pending<number>()
  late.resolve(6)
  late.deliver(receiver)
  t.same(seen, ['fulfilled 4', 'rejected replayed', 'fulfilled 6'], 'synchronously, in the settler\'s turn; at once when already settled')

  const thrown = nextUncaught()
  const shared = new Pending<number>()
  const after: number[] = []
  shared.deliver({ fulfilled: () => { throw new Error('receiver broke') }, rejected: () => {} })
  shared.then((value) => { after.push(value) })
  shared.resolve(9)
  t.same(after, [9], 'the waiters after a throwing receiver still get the value')
  t.match(await thrown, { message: 'receiver broke' }, 'and the throw is not lost: thrown in a microtask')

  const handled = new Pending<number>()
  handled.deliver(receiver)
  handled.reject(new Error('handled'))
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(seen.at(-1), 'rejected handled', 'a delivered rejection is the receiver\'s: not thrown')
})

t.test('isThenable: promises, Pendings and thenables; nothing else', async (t) => {
  t.ok(isThenable(Promise.resolve(1)))
  t.ok(isThenable(new Pending()))
  t.ok(isThenable({ then () {} }))
  for (const value of [undefined, null, 1, 'then', { then: 1 }, true]) t.notOk(isThenable(value), String(value))
})
