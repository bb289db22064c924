import t from 'tap'
import { MemoryStore } from '../../../plugin/store/memory/memory-store.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { storeSuite } from '../../helpers/store-suite.ts'

// The store's clock runs with real time, and each case steps it past an expiry instead of sleeping.
storeSuite(t, async (t) => {
  const clock = steppedClock()
  const store = new MemoryStore({ clock: clock.now })
  t.teardown(() => store.close())
  return { store, pass: async (ms) => { clock.step(ms) } }
})
