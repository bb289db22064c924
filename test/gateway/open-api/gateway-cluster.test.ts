// Two gateway instances on a real Redis Cluster (3 masters, 3 replicas), over real HTTP: the shared
// suite (the code flow across them, nonces and revocations shared), the CLI on the cluster, and a
// master killed under signed load.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { grantAccessToken } from '../../../plugin/index.ts'
import { addClient } from '../../helpers/app.ts'
import { cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { gatewayPairSuite } from '../../helpers/gateway-pair-suite.ts'
import { eventually, liveGateway, signedGet, type ApiAnswer } from '../../helpers/live.ts'
import { startRedisCluster } from '../../helpers/redis-cluster.ts'

const cluster = await startRedisCluster(t)
const shared = { clusterNodes: cluster.seeds.split(','), prefix: `test:${randomBytes(6).toString('hex')}:` }
const secret = randomBytes(32).toString('base64url')
const a = await liveGateway(t, shared, secret)
const b = await liveGateway(t, shared, secret)

// What two instances share, as on a single Redis (helpers/gateway-pair-suite.ts); a revocation
// reaches the other instance within 100 ms here.
gatewayPairSuite(t, { a, b, revokedWithinMs: 100 })

t.test('the CLI on the cluster: REDIS_CLUSTER_NODES for clients add and list', async (t) => {
  const env = cliEnv({ REDIS_CLUSTER_NODES: cluster.seeds, MACGATE_REDIS_PREFIX: shared.prefix })
  const added = await runInProcess(['clients', 'add', '--name', 'Cluster App', '--redirect-uri', 'https://app.example.com/cb', '--resource-server', '--json'], env)
  t.equal(added.code, 0, added.stderr)
  const { client_id: clientId } = JSON.parse(added.stdout) as { client_id: string }
  t.equal((await a.store.getClient(clientId))?.resourceServer, true, 'the gateways see the client, a resource server')
  const listed = await runInProcess(['clients', 'list', '--json'], env)
  t.ok((JSON.parse(listed.stdout) as Array<{ id: string }>).some((client) => client.id === clientId), 'clients list finds it')
  const unreachable = await runInProcess(['clients', 'list'], cliEnv({ REDIS_CLUSTER_NODES: '127.0.0.1:1' }))
  t.equal(unreachable.code, 2)
  t.match(unreachable.stderr, 'cannot reach Redis at REDIS_CLUSTER_NODES')
  const malformed = await runInProcess(['clients', 'list'], cliEnv({ REDIS_CLUSTER_NODES: 'nohostport' }))
  t.equal(malformed.code, 2)
  t.match(malformed.stderr, 'REDIS_CLUSTER_NODES: a cluster node is host:port, not "nohostport"')
})

interface Call { at: number, ms: number, token: number, answer: ApiAnswer & { authorization: string } }

// Last: it kills a master.
t.test('a master killed under signed load: 503s while its slots move, then recovery without restart', async (t) => {
  const { clientId } = await addClient(a.store)
  // Eight grants, so that the load touches many slots (tokens seeded as an operator would).
  const tokens = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
    const { accessToken, macKey } = await grantAccessToken(a.app.macgate, { clientId, userId: `load-${i}`, scope: ['1', '3'] })
    return { access_token: accessToken, mac_key: macKey }
  }))
  for (const held of tokens) {
    for (const gateway of [a, b]) t.equal((await signedGet(gateway.origin, '/user/profile', held)).status, 200)
  }
  // The master of a nonce tag: the store spreads every token's nonces over all 16 tags by their
  // keyed hash, so every token has nonces there.
  const victim = await cluster.masterOf('{n:0}')
  const onVictim = new Set(tokens.map((_, token) => token))

  const calls: Call[] = []
  let running = true
  const loop = async (worker: number): Promise<void> => {
    // eslint-disable-next-line no-unmodified-loop-condition -- the test clears `running` while the loops await
    for (let i = worker; running; i++) {
      const token = i % tokens.length
      const gateway = i % 2 === 0 ? a : b
      const sent = Date.now()
      const answer = await signedGet(gateway.origin, '/user/profile', tokens[token]!)
      calls.push({ at: Date.now(), ms: Date.now() - sent, token, answer })
    }
  }
  const loops = Array.from({ length: 6 }, async (_, worker) => await loop(worker))
  t.ok(await eventually(async () => calls.length >= 60, 10_000, 10), 'the load runs before the kill')
  const killedAt = Date.now()
  await cluster.kill(victim)
  await cluster.settled()
  const settledAt = Date.now()
  // The load runs on until the recovery shows (the last 100 calls, all after the cluster settled,
  // accepted and for every token), or for the 15 s the refusals may last.
  await eventually(async () => {
    const last = calls.slice(-100)
    return last.length === 100 && last.every(({ at, answer }) => at > settledAt && answer.status === 200) && new Set(last.map(({ token }) => token)).size === tokens.length
  }, 15_000, 50)
  running = false
  await Promise.all(loops)

  const unexpected = calls.filter(({ answer }) => answer.status !== 200 && !(answer.status === 503 && answer.body.code === 96000))
  t.strictSame(unexpected.map(({ answer }) => `${answer.status} ${answer.raw}`), [], 'every answer is a 200 or a 503 with 96000')
  const refused = calls.filter(({ answer }) => answer.status === 503)
  // A call needing the dead master's slots is held while the cluster client retries, then answered
  // or refused: the kill shows on the calls of the tokens whose nonces live there, either way (which
  // of them a loop reaches first while the others are held is chance).
  const felt = calls.filter(({ token, answer, ms }) => onVictim.has(token) && (answer.status === 503 || ms > 500))
  t.ok(felt.length > 0, `calls on the killed master's slots were held or refused meanwhile (${felt.length}; ${refused.length} 503s of ${calls.length} calls)`)
  const lastRefusal = Math.max(killedAt, ...refused.map(({ at }) => at))
  t.ok(lastRefusal - killedAt < 15_000, `503s ended ${lastRefusal - killedAt} ms after the kill (the cluster settled after ${settledAt - killedAt} ms)`)
  // The cluster client retries a command while the slots move; the retries are bounded.
  const slowest = Math.max(...calls.map(({ ms }) => ms))
  t.ok(slowest < 6000, `the slowest answer took ${slowest} ms`)
  const after = calls.filter(({ at }) => at > lastRefusal)
  t.ok(after.length > 20 && after.every(({ answer }) => answer.status === 200), `${after.length} calls after the last 503, all accepted`)

  // Every accepted request's nonce survived the failover: replayed now, each is refused.
  const accepted = calls.filter(({ answer }) => answer.status === 200)
  const sample = accepted.filter((_, i) => i % Math.ceil(accepted.length / 300) === 0)
  const replays = await Promise.all(sample.map(async ({ token, answer }) => await signedGet(a.origin, '/user/profile', tokens[token]!, answer.authorization)))
  t.strictSame(replays.filter((replay) => replay.status !== 401 || replay.body.code !== 96012).map((replay) => replay.status), [], `${sample.length} accepted requests replayed after the failover: each refused as a replay`)
  t.comment(`failover: killed ${victim.address}; ${refused.length} 503s until ${lastRefusal - killedAt} ms after; cluster settled in ${settledAt - killedAt} ms; slowest answer ${slowest} ms`)
})
