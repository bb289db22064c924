// The mix scenario's population, made inside its gateway's process (bench/target.ts): many clients,
// many users, many live tokens, saved as the implicit grant saves them. Once per run, before any
// measurement: its time is reported, never measured.
import { writeFile } from 'node:fs/promises'
import { grantAccessToken, registerClient, ScopeRegistry, type MacgateContext } from '../plugin/index.ts'

const CLIENTS = 200
const USERS = 50_000
/**
 * Grants in flight at once: enough for ioredis to pipeline their writes (the store enables
 * auto-pipelining), few enough to keep the pending promises and Redis's input buffer small.
 */
const IN_FLIGHT = 2000

interface Credentials {
  accessToken: string
  macKey: string
}

async function registerClients (config: MacgateContext): Promise<string[]> {
  const registry = new ScopeRegistry()
  const register = async (_: unknown, index: number): Promise<string> => {
    const { client } = await registerClient(config.store, registry, { name: `bench population ${index}`, redirectUris: ['https://bench.example/callback'], scope: '1 3' })
    return client.id
  }
  return await Promise.all(Array.from({ length: CLIENTS }, register))
}

/**
 * Token `index` belongs to user `index mod USERS`, and each user's tokens (four, at the full
 * population) go to as many neighbouring clients: every client and every user holds several.
 */
function ownerOf (index: number, clients: string[]): { clientId: string, userId: string } {
  const user = index % USERS
  return { clientId: clients[(user + Math.floor(index / USERS)) % clients.length]!, userId: `bench-population-user-${user}` }
}

async function grantAll (config: MacgateContext, clients: string[], count: number): Promise<Credentials[]> {
  const credentials: Credentials[] = []
  for (let start = 0; start < count; start += IN_FLIGHT) {
    const grant = async (_: unknown, offset: number): Promise<Credentials> => {
      const { accessToken, macKey } = await grantAccessToken(config, { ...ownerOf(start + offset, clients), scope: ['1', '3'] })
      return { accessToken, macKey }
    }
    credentials.push(...await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, count - start) }, grant)))
  }
  return credentials
}

/** Makes `count` live tokens and writes their credentials to `file`; resolves to how long the making took, ms. */
export async function createPopulation (config: MacgateContext, count: number, file: string): Promise<number> {
  const started = performance.now()
  const credentials = await grantAll(config, await registerClients(config), count)
  const millis = performance.now() - started
  await writeFile(file, credentials.map(({ accessToken, macKey }) => `${accessToken} ${macKey}\n`).join(''))
  return millis
}
