import { MemoryStore, RedisStore, type Store } from '../plugin/index.js'

function maxNonces (value: string): number {
  const count = Number(value)
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`MACGATE_MAX_NONCES must be a whole number of at least 1, not ${value}`)
  return count
}

/** The shared store the environment names, if any: `REDIS_CLUSTER_NODES` (seed nodes), else `REDIS_URL`. */
export function sharedStoreName (env: NodeJS.ProcessEnv = process.env): 'REDIS_CLUSTER_NODES' | 'REDIS_URL' | undefined {
  if (env.REDIS_CLUSTER_NODES !== undefined && env.REDIS_CLUSTER_NODES !== '') return 'REDIS_CLUSTER_NODES'
  if (env.REDIS_URL !== undefined && env.REDIS_URL !== '') return 'REDIS_URL'
  return undefined
}

/** The store the environment names: a Redis Cluster, a single Redis, or the embedded one without either. */
export async function openStore (env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  const shared = sharedStoreName(env)
  if (shared === undefined) return new MemoryStore(env.MACGATE_MAX_NONCES === undefined ? {} : { maxNonces: maxNonces(env.MACGATE_MAX_NONCES) })
  const prefix = env.MACGATE_REDIS_PREFIX ?? 'macgate:'
  if (shared === 'REDIS_URL') return await new RedisStore(env.REDIS_URL!, { prefix }).connect()
  const clusterNodes = env.REDIS_CLUSTER_NODES!.split(',').map((node) => node.trim()).filter((node) => node !== '')
  let store: RedisStore
  try {
    store = new RedisStore({ clusterNodes }, { prefix })
  } catch (error) {
    throw new RangeError(`REDIS_CLUSTER_NODES: ${(error as Error).message}`)
  }
  return await store.connect()
}
