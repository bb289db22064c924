// The seeded fuzz (test/fuzz.test.ts) through a Redis outage: a few hundred requests before, during
// and after Redis is stopped, through inject and raw sockets. Asserted as there, with the outage's
// 503 96000 the one 5xx allowed while Redis is down, and the gateway serving again after it.
import t from 'tap'
import { generator } from './helpers/fuzz-pools.ts'
import { injectPhase } from './helpers/fuzz-inject.ts'
import { Tally, totals } from './helpers/fuzz-judge.ts'
import { rawPhase } from './helpers/fuzz-raw.ts'
import { fuzzGateway, OUTAGE_SEED, provision, stillServes } from './helpers/fuzz-world.ts'
import { eventually } from './helpers/live.ts'
import { startRedis } from './helpers/redis.ts'
import { collectStrays } from './helpers/strays.ts'

const shared = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''
const own = { skip: shared ? 'stops and restarts Redis: needs a redis-server of its own, not REDIS_URL' : false }

// Every store failure must become an answer, never a stray rejection.
const strays = collectStrays(t)

t.test(`fuzz seed 0x${OUTAGE_SEED.toString(16)} through a Redis outage`, own, async (t) => {
  const started = Date.now()
  const redis = await startRedis(t)
  const { app, store, port } = await fuzzGateway(t, redis)
  let world = await provision(app)
  const g = generator(OUTAGE_SEED)
  const tally = new Tally()
  let outage = false
  const during = () => outage
  await injectPhase(app, g, () => world, 300, 'before', tally, during)

  outage = true
  await redis.stop()
  await injectPhase(app, g, () => world, 400, 'outage', tally, during)
  await rawPhase(port, g, world, 50, 'outage-raw', tally, during)
  const refused = tally.statuses.get(503) ?? 0
  await redis.start()
  // Redis came back empty: the window ends once the store answers again; then new credentials.
  t.ok(await eventually(async () => { await store.getClient('1'); return true }, 10_000), 'the store answers again after the restart')
  outage = false
  world = await provision(app)

  await injectPhase(app, g, () => world, 1000, 'after', tally, during)
  await rawPhase(port, g, world, 50, 'after-raw', tally, during)
  t.comment(`${tally.count} requests in ${Date.now() - started} ms, ${refused} answered 503 during the outage`)
  t.ok(refused > 0, 'the outage was seen')
  tally.report(t, 'outage fuzz')
  await stillServes(t, app, world)
  strays.check(t)
})

strays.checkLast(t, () => `the file sent ${totals.requests} requests in ${Date.now() - totals.started} ms`)
