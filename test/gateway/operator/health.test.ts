// The load balancer's probes on a gateway over a Redis of the test's own: live while the process
// serves, ready only while the store answers, and ready again by itself once Redis is back.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { buildAdminServer } from '../../../gateway/index.ts'
import { buildTestGateway } from '../../helpers/gateway.ts'
import { eventually } from '../../helpers/live.ts'

const shared = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''

function assertReady (t: Test, response: LightMyRequestResponse, where: string): void {
  t.equal(response.statusCode, 200, `${where}: ready 200`)
  const body = response.json() as { status: string, store: { kind: string, status: string, ms: number, error?: string } }
  t.match(body, { status: 'ready', store: { kind: 'redis', status: 'up', ms: Number } }, `${where}: the store up, with its answer time`)
  t.ok(body.store.ms >= 0 && body.store.ms < 2000, `${where}: ms ${body.store.ms}`)
  t.notOk('error' in body.store, `${where}: no error`)
}

function assertUnavailable (t: Test, response: LightMyRequestResponse, where: string): void {
  t.equal(response.statusCode, 503, `${where}: ready 503`)
  const body = response.json() as { status: string, store: { kind: string, status: string, error: string } }
  t.match(body, { status: 'unavailable', store: { kind: 'redis', status: 'down', error: String } }, `${where}: the store down`)
  t.not(body.store.error, '', `${where}: says why (${body.store.error})`)
  t.notOk('ms' in body.store, `${where}: no answer time`)
}

const live = async (t: Test, app: FastifyInstance, url: string): Promise<void> => {
  const response = await app.inject({ url })
  t.equal(response.statusCode, 200, `${url} 200`)
  t.same(response.json(), { status: url === '/healthz' ? 'ok' : 'live' }, `${url} body`)
}

t.test('live and ready; Redis stopped: not ready, still live; Redis back: ready again by itself', { skip: shared ? 'stops Redis: needs a redis-server of its own' : false }, async (t) => {
  const { app, store, redis } = await buildTestGateway(t, { store: 'redis' })
  const admin = await buildAdminServer({ metrics: async () => ({ contentType: 'text/plain', text: '' }), store })
  t.teardown(async () => await admin.close())

  await live(t, app, '/health/live')
  await live(t, app, '/healthz')
  await live(t, admin, '/health/live')
  const ready = await app.inject({ url: '/health/ready' })
  assertReady(t, ready, 'public')
  t.equal(ready.headers['cache-control'], 'no-store', 'a probe answer is never cached')
  assertReady(t, await admin.inject({ url: '/health/ready' }), 'admin')

  await redis!.stop()
  const downAt = Date.now()
  assertUnavailable(t, await app.inject({ url: '/health/ready' }), 'public')
  assertUnavailable(t, await admin.inject({ url: '/health/ready' }), 'admin')
  await live(t, app, '/health/live')
  await live(t, app, '/healthz')
  await live(t, admin, '/health/live')
  t.comment(`unavailable reported ${Date.now() - downAt} ms after Redis stopped`)

  await redis!.start()
  const upAt = Date.now()
  const back = await eventually(async () => (await app.inject({ url: '/health/ready' })).statusCode === 200, 10_000, 50)
  const elapsed = Date.now() - upAt
  t.ok(back, `ready again within 10 s of Redis starting (${elapsed} ms)`)
  t.comment(`ready again ${elapsed} ms after Redis started`)
  assertReady(t, await app.inject({ url: '/health/ready' }), 'public, after')
  assertReady(t, await admin.inject({ url: '/health/ready' }), 'admin, after')
})

t.test('the embedded store: always ready', async (t) => {
  const { app } = await buildTestGateway(t)
  const response = await app.inject({ url: '/health/ready' })
  t.equal(response.statusCode, 200)
  t.match(response.json(), { status: 'ready', store: { kind: 'memory', status: 'up', ms: Number } })
})
