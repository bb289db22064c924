// One server under test, in a process of its own so that it can be pinned to a core and its CPU
// time read apart from the load generator's. Started by bench/run.ts with the kind to serve:
//   upstream | proxy | gateway-memory | gateway-redis | gateway-cold
// It prints one JSON line (`ready`) and answers IPC requests: `cpu`, `codes`.
import { createServer } from 'node:http'
import fastifyHttpProxy from '@fastify/http-proxy'
import Fastify, { type FastifyInstance } from 'fastify'
import { buildGateway } from '../gateway/server.js'
import { registerClient } from '../plugin/admin.js'
import { issueAccessToken } from '../plugin/oauth/token-set.js'
import { hashSecret, mintCode, newGrantId } from '../plugin/oauth/tokens.js'
import { ScopeRegistry } from '../plugin/oauth/scope.js'
import { MemoryStore } from '../plugin/store/memory.js'
import { RedisStore } from '../plugin/store/redis.js'
import type { Store } from '../plugin/store/store.js'

const [kind = 'upstream', upstream = '', redisUrl = ''] = process.argv.slice(2)
export const REDIRECT_URI = 'https://bench.example/callback'
const PROXY_POOL = { connections: 128, pipelining: 1, keepAliveTimeout: 60_000 }

function send (message: object): void {
  process.send?.(message)
}

async function startUpstream (): Promise<number> {
  const body = JSON.stringify({ result: 'ok', description: 'success', data: { miliaoNick: 'bench' }, code: 0 })
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    response.end(body)
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as { port: number }).port
}

/** The baseline: a plain @fastify/http-proxy configured like the gateway's. */
async function buildPlainProxy (): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  await app.register(fastifyHttpProxy, { upstream, undici: PROXY_POOL })
  return app
}

async function buildTarget (store: Store, lruMax: number): Promise<FastifyInstance> {
  return await buildGateway({
    store,
    config: { upstream, routes: [{ path: '/api/*', methods: ['GET'], scopes: ['1'], match: 'all' }], tokenCache: { max: lruMax, maxAgeMs: 300_000, negativeTtlMs: 10_000 } }
  })
}

async function main (): Promise<void> {
  if (kind === 'upstream') {
    send({ ready: true, port: await startUpstream() })
  } else if (kind === 'proxy') {
    const app = await buildPlainProxy()
    await app.listen({ port: 0, host: '127.0.0.1' })
    send({ ready: true, port: (app.server.address() as { port: number }).port })
  } else {
    const store = kind === 'gateway-memory' ? new MemoryStore() : await new RedisStore(redisUrl, { prefix: `bench:${kind}:` }).connect()
    const app = await buildTarget(store, kind === 'gateway-cold' ? 0 : 100_000)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const config = app.macgate
    const { client, clientSecret } = await registerClient(store, new ScopeRegistry(), { name: 'bench', redirectUris: [REDIRECT_URI], scope: '1 3' })
    const grantee = { grantId: newGrantId(), clientId: client.id, userId: 'bench-user', scope: ['1', '3'] }
    const issued = issueAccessToken(config, grantee, config.accessTokenTtl)
    await store.saveTokens({ grantId: grantee.grantId, access: issued.stored }, config.accessTokenTtl, config.accessTokenTtl)

    process.on('message', (message: { type: string, count?: number }) => {
      if (message.type !== 'codes') return
      // Codes for the token endpoint scenario, saved as the authorize endpoint saves them.
      const codes: string[] = []
      const saves: Array<Promise<void>> = []
      for (let i = 0; i < (message.count ?? 0); i++) {
        const grantId = newGrantId()
        const code = mintCode(config.secret, grantId)
        codes.push(code)
        saves.push(store.saveCode(hashSecret(code), grantId, { grantId, clientId: client.id, userId: 'bench-user', redirectUri: REDIRECT_URI, scope: ['1'] }, 600))
      }
      Promise.all(saves).then(() => send({ type: 'codes', codes }), (error: Error) => send({ type: 'error', message: error.message }))
    })
    send({ ready: true, port: (app.server.address() as { port: number }).port, secret: config.secret, clientId: client.id, clientSecret, redirectUri: REDIRECT_URI, accessToken: issued.accessToken, macKey: issued.macKey })
  }
  process.on('message', (message: { type: string }) => {
    if (message.type === 'cpu') {
      const usage = process.cpuUsage()
      send({ type: 'cpu', micros: usage.user + usage.system })
    }
  })
}

// A clean exit on SIGTERM, so that `node --cpu-prof` writes its profile.
process.on('SIGTERM', () => process.exit(0))

main().catch((error: Error) => {
  send({ type: 'error', message: error.message })
  process.exit(1)
})
