import { MemoryStore, RedisStore, type Store } from '../plugin/index.js'

function maxNonces (value: string): number {
  const count = Number(value)
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`MACGATE_MAX_NONCES must be a whole number of at least 1, not ${value}`)
  return count
}

/** The store the environment names: Redis at REDIS_URL, or the embedded one without it. */
export async function openStore (env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  const url = env.REDIS_URL
  if (url === undefined || url === '') return new MemoryStore(env.MACGATE_MAX_NONCES === undefined ? {} : { maxNonces: maxNonces(env.MACGATE_MAX_NONCES) })
  return await new RedisStore(url, { prefix: env.MACGATE_REDIS_PREFIX ?? 'macgate:' }).connect()
}
