import { MemoryStore } from '../plugin/store/memory.js'
import { RedisStore } from '../plugin/store/redis.js'
import type { Store } from '../plugin/store/store.js'

/** The store the environment names: Redis at REDIS_URL, or the embedded one without it. */
export async function openStore (env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  const url = env.REDIS_URL
  if (url === undefined || url === '') return new MemoryStore()
  return await new RedisStore(url, { prefix: env.MACGATE_REDIS_PREFIX ?? 'macgate:' }).connect()
}
