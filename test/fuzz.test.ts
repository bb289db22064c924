// A seeded fuzz of every endpoint on a real Redis: 4,000 random and malformed requests through
// inject (20,000 with FUZZ_FULL=1: test/helpers/fuzz-size.ts), and a few hundred over raw sockets
// for what inject cannot express (request lines, header bytes); test/fuzz-outage.test.ts fuzzes
// through a Redis outage. Asserted in aggregate, per category: no 5xx, every answer of its
// endpoint's kind (an HTML page, a `&&&START&&&` token body, the open API's JSON), no unhandled
// rejection or exception, and a known-good signed request still served at the end. The seeds are
// in the test names; FUZZ_SEED=<n> runs another, and FUZZ_REPORT=<file> writes one example of
// every kind of failure found.
import t from 'tap'
import { generator } from './helpers/fuzz-pools.ts'
import { fuzzCount } from './helpers/fuzz-size.ts'
import { injectPhase } from './helpers/fuzz-inject.ts'
import { REACHED, Tally, totals } from './helpers/fuzz-judge.ts'
import { rawPhase } from './helpers/fuzz-raw.ts'
import { fuzzGateway, provision, SEED, stillServes } from './helpers/fuzz-world.ts'
import { startRedis } from './helpers/redis.ts'
import { collectStrays } from './helpers/strays.ts'

const INJECT_COUNT = fuzzCount(20_000)
const RAW_COUNT = 400

// Every store failure must become an answer, never a stray rejection.
const strays = collectStrays(t)

t.test(`fuzz seed 0x${SEED.toString(16)}: ${INJECT_COUNT} inject and ${RAW_COUNT} raw requests on a real Redis`, async (t) => {
  const started = Date.now()
  const redis = await startRedis(t)
  const { app, port } = await fuzzGateway(t, redis)
  const world = await provision(app)
  const g = generator(SEED)
  const tally = new Tally()
  const never = () => false
  await injectPhase(app, g, () => world, INJECT_COUNT / 2, 'inject', tally, never)
  await rawPhase(port, g, world, RAW_COUNT, 'raw', tally, never)
  await injectPhase(app, g, () => world, INJECT_COUNT / 2, 'inject2', tally, never)
  t.comment(`${tally.count} requests in ${Date.now() - started} ms (${tally.served} correctly signed ones served)`)
  t.ok(tally.count >= INJECT_COUNT + RAW_COUNT, `${tally.count} requests sent`)
  t.ok(tally.served >= INJECT_COUNT / 20, 'the fuzz reached the upstream through valid signatures')
  t.comment(`answers reached: ${JSON.stringify(Object.fromEntries(tally.reached))}`)
  t.same(REACHED.filter((kind) => (tally.reached.get(kind) ?? 0) < 3), [], 'the fuzz reached past the first checks of every endpoint')
  tally.report(t, 'fuzz')
  await stillServes(t, app, world)
  strays.check(t)
})

strays.checkLast(t, () => `the file sent ${totals.requests} requests in ${Date.now() - totals.started} ms`)
