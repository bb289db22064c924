// "Any number of simultaneous exchanges of one code, on any number of gateway instances, yield
// exactly one success" (contract section 4), and the same for rotations of one refresh token:
// on one app (memory and Redis), on two apps sharing one Redis, and on two gateway processes.
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { spawnSource } from '../../helpers/source.ts'
import t, { type Test } from 'tap'
import { hashSecret } from '../../../plugin/access/credentials.ts'
import type { Store } from '../../../plugin/store/store.ts'
import { addClient, buildTestApp, callToken, obtainCode } from '../../helpers/app.ts'
import type { TestRedis } from '../../helpers/redis.ts'
import { assertTokenSet, codeParams, grantOf, PREFIX, refreshParams, TOKEN_FIELDS, type TokenSetBody } from '../../helpers/token-checks.ts'

const N = 20
const ROUNDS = 3

interface Outcome {
  status: number
  body: Record<string, unknown>
}

/** Sends `N` requests at once, request i to `send(i)`. */
async function race (send: (i: number) => Promise<Outcome>): Promise<Outcome[]> {
  return await Promise.all(Array.from({ length: N }, async (_, i) => await send(i)))
}

/**
 * Exactly one 200 with a whole token set, every other answer `400 <loserError>`; and since the
 * losers presented a spent code or refresh token, the winner's tokens end up revoked (the replay rule).
 */
async function assertOneWinner (t: Test, outcomes: Outcome[], loserError: number, app: FastifyInstance, store: Store): Promise<void> {
  const tally: Record<string, number> = {}
  for (const { status, body } of outcomes) {
    const key = status === 200 ? '200' : `${status} ${String(body.error)}`
    tally[key] = (tally[key] ?? 0) + 1
  }
  t.strictSame(tally, { 200: 1, [`400 ${loserError}`]: N - 1 }, 'exactly one success, every other request refused')
  const winner = outcomes.find((outcome) => outcome.status === 200)?.body as TokenSetBody | undefined
  if (winner === undefined) return
  t.strictSame(Object.keys(winner), TOKEN_FIELDS, 'the winner got the whole token set')
  const grantId = grantOf(app, winner.access_token)
  t.equal(await store.getAccessToken(hashSecret(winner.access_token), grantId), undefined, 'the replays revoked the winner\'s access token')
  t.equal(await store.getRefreshToken(hashSecret(winner.refresh_token), grantId), undefined, 'the replays revoked the winner\'s refresh token')
}

const viaInject = (apps: FastifyInstance[], params: Record<string, string>) => async (i: number): Promise<Outcome> =>
  await callToken(apps[i % apps.length]!, params)

/** A fresh token set for the client, from the first app. */
async function freshTokens (t: Test, app: FastifyInstance, client: { clientId: string, clientSecret: string }): Promise<TokenSetBody> {
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  return assertTokenSet(t, await callToken(app, codeParams(client, code)))
}

/** Code and refresh races against the given apps, which share `store`. */
function raceTests (t: Test, apps: FastifyInstance[], store: Store, client: { clientId: string, clientSecret: string }): void {
  const first = apps[0]!
  t.test(`${N} simultaneous exchanges of one code`, async (t) => {
    for (let round = 1; round <= ROUNDS; round++) {
      const { code } = await obtainCode(first, client.clientId, { scope: '1 3' })
      await assertOneWinner(t, await race(viaInject(apps, codeParams(client, code))), 96013, first, store)
    }
  })
  t.test(`${N} simultaneous rotations of one refresh token`, async (t) => {
    for (let round = 1; round <= ROUNDS; round++) {
      const issued = await freshTokens(t, first, client)
      await assertOneWinner(t, await race(viaInject(apps, refreshParams(client, issued.refresh_token))), 96009, first, store)
    }
  })
}

for (const kind of ['memory', 'redis'] as const) {
  t.test(`${kind}: one app`, async (t) => {
    const { app, store } = await buildTestApp(t, { store: kind })
    const client = await addClient(store)
    raceTests(t, [app], store, client)
  })
}

t.test('redis: two apps in this process sharing one Redis', async (t) => {
  const a = await buildTestApp(t, { store: 'redis' })
  const b = await buildTestApp(t, { store: 'redis', redis: a.redis })
  t.not(a.store, b.store, 'two stores, two connections')
  const client = await addClient(a.store)
  raceTests(t, [a.app, b.app], a.store, client)
})

const FIXTURE = fileURLToPath(new URL('../../fixtures/token-gateway.ts', import.meta.url))

/** Starts test/fixtures/token-gateway.ts as a process of its own; resolves to its base URL. */
async function spawnGateway (t: Test, redis: TestRedis): Promise<string> {
  const child = spawnSource(FIXTURE, [], {
    env: { ...process.env, TOKEN_FIXTURE_REDIS_URL: redis.url, TOKEN_FIXTURE_PREFIX: redis.prefix },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc']
  })
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
  })
  let output = ''
  child.stdout!.setEncoding('utf8')
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: string) => {
      output += chunk
      if (output.includes('\n')) resolve()
    })
    child.once('exit', (code) => { reject(new Error(`gateway process exited (${String(code)}) before listening: ${output}`)) })
  })
  const { port } = JSON.parse(output.split('\n')[0]!) as { port: number }
  const base = `http://127.0.0.1:${port}`
  t.equal((await fetch(`${base}/healthz`)).status, 200, `gateway process on port ${port} is up`)
  return base
}

/** A real HTTP GET of /oauth2/token. */
async function fetchToken (base: string, params: Record<string, string>): Promise<Outcome> {
  const response = await fetch(`${base}/oauth2/token?${new URLSearchParams(params).toString()}`)
  const raw = await response.text()
  return { status: response.status, body: JSON.parse(raw.startsWith(PREFIX) ? raw.slice(PREFIX.length) : raw) as Record<string, unknown> }
}

t.test('redis: two gateway processes', async (t) => {
  const { app, store, redis } = await buildTestApp(t, { store: 'redis' })
  const client = await addClient(store)
  const bases = await Promise.all([spawnGateway(t, redis!), spawnGateway(t, redis!)])
  const viaHttp = (params: Record<string, string>) => async (i: number): Promise<Outcome> => await fetchToken(bases[i % 2]!, params)

  // Each process serves the token endpoint from the shared Redis (and the shared server secret).
  for (const base of bases) {
    const issued = await freshTokens(t, app, client)
    const answer = await fetchToken(base, refreshParams(client, issued.refresh_token))
    t.equal(answer.status, 200, `${base} refreshes a token issued by this process`)
    t.equal(answer.body.openId, issued.openId, `${base} derives the same openId`)
  }

  t.test(`${N} simultaneous exchanges of one code, split between the processes`, async (t) => {
    for (let round = 1; round <= ROUNDS; round++) {
      const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
      await assertOneWinner(t, await race(viaHttp(codeParams(client, code))), 96013, app, store)
    }
  })
  t.test(`${N} simultaneous rotations of one refresh token, split between the processes`, async (t) => {
    for (let round = 1; round <= ROUNDS; round++) {
      const issued = await freshTokens(t, app, client)
      await assertOneWinner(t, await race(viaHttp(refreshParams(client, issued.refresh_token))), 96009, app, store)
    }
  })
})
