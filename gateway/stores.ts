import { MemoryStore, RedisStore, type Store } from '../plugin/index.js'

/** The store the environment names: Redis at REDIS_URL, or the embedded one without it. */
export async function openStore (env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  const url = env.REDIS_URL
  if (url === undefined || url === '') return new MemoryStore()
  return await new RedisStore(url, { prefix: env.MACGATE_REDIS_PREFIX ?? 'macgate:' }).connect()
}
