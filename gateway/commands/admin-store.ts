import { errors, type Store } from '../../plugin/index.js'
import { openStore, sharedStoreName } from '../stores.js'
import { UsageError } from './usage.js'

/** The store the environment names; an unreachable Redis is the operator's to fix: one line, exit 2. */
export async function openCommandStore (): Promise<Store> {
  return await openStore().catch((error: unknown) => {
    if (!errors.storeUnavailable.is(error)) throw new UsageError((error as Error).message)
    throw new UsageError(`cannot reach Redis at ${sharedStoreName() ?? 'REDIS_URL'} (${(error as Error & { cause?: Error }).cause?.message ?? (error as Error).message})`)
  })
}

/** Runs an admin command against the shared store; the embedded one lives only inside `start`. */
export async function withAdminStore (action: (store: Store) => Promise<void>): Promise<void> {
  if (sharedStoreName() === undefined) {
    throw new UsageError('this command needs REDIS_URL or REDIS_CLUSTER_NODES: the embedded store lives only inside `macgate start`, which prints a demo client and user')
  }
  const store = await openCommandStore()
  try {
    await action(store)
  } finally {
    await store.close()
  }
}
