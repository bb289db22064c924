import t from 'tap'
import { MemoryStore } from '../plugin/store/memory/memory-store.js'
import { storeSuite } from './helpers/store-suite.js'

storeSuite(t, async (t) => {
  const store = new MemoryStore()
  t.teardown(() => store.close())
  return store
})
