import { errors, type Store } from '../../plugin/index.ts'
import { openStore, sharedStoreName, unreachableMessage } from '../assembly/stores.ts'
import { OperatorError } from './usage.ts'

/**
 * The store the environment names. A malformed REDIS_URL or REDIS_CLUSTER_NODES is refused before
 * any connection; an unreachable Redis is named with the reason. Both are the operator's to fix:
 * one line, exit 2, no usage hint.
 */
export async function openCommandStore (env: NodeJS.ProcessEnv): Promise<Store> {
  return await openStore(env).catch(async (error: unknown) => {
    if (!errors.storeUnavailable.is(error)) throw new OperatorError((error as Error).message)
    throw new OperatorError(await unreachableMessage(error, env))
  })
}

/** Runs an admin command against the shared store `env` names; the embedded one lives only inside `start`. */
export async function withAdminStore (env: NodeJS.ProcessEnv, action: (store: Store) => Promise<void>): Promise<void> {
  if (sharedStoreName(env) === undefined) {
    throw new OperatorError('this command needs REDIS_URL or REDIS_CLUSTER_NODES: the embedded store lives only inside `macgate start`, which prints a demo client and user')
  }
  const store = await openCommandStore(env)
  try {
    await action(store)
  } finally {
    await store.close()
  }
}
