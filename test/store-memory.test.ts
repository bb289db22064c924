import t from 'tap'
import { MemoryStore } from '../plugin/store/memory/memory-store.ts'
import { storeSuite } from './helpers/store-suite.ts'

// The store's clock runs with real time, and each case steps it past an expiry instead of sleeping.
storeSuite(t, async (t) => {
  let stepped = 0
  const store = new MemoryStore({ clock: () => Date.now() + stepped })
  t.teardown(() => store.close())
  return { store, pass: async (ms) => { stepped += ms } }
})
