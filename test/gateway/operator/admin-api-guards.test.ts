// What guards the admin API: the bearer token before any action, a fault of ours answered without
// anything internal, and a store outage answered 503 by every endpoint.
import t from 'tap'
import { buildAdminServer } from '../../../gateway/index.ts'
import pino from 'pino'
import { AuditEvents, MemoryStore, ScopeRegistry } from '../../../plugin/index.ts'
import { addClient, addUser, buildTestApp, REDIRECT_URI } from '../../helpers/app.ts'
import { memoryLog } from '../../helpers/memory-log.ts'
import { startRedis } from '../../helpers/redis.ts'
import { type InjectOptions } from 'fastify'
import { adminFor, assertNotFound, call } from '../../helpers/admin-api.ts'

t.test('the bearer token: 401 without it or with a wrong one, before any action', async (t) => {
  const { app, store } = await buildTestApp(t)
  const token = 'admin-api-token-0123456789abcdef'
  const admin = await adminFor(t, app, token)
  for (const authorization of [undefined, 'Bearer wrong', `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, 'Bearer ', token, `Basic ${token}`]) {
    const headers: Record<string, string> = authorization === undefined ? {} : { authorization }
    const label = authorization === undefined ? 'none' : JSON.stringify(authorization.replace(token, '<token>'))
    const list = await call(admin, 'GET', '/admin/clients', undefined, headers)
    t.equal(list.status, 401, `GET /admin/clients, ${label}: 401`)
    t.equal(list.headers['www-authenticate'], 'Bearer realm="macgate-admin"')
    const create = await call(admin, 'POST', '/admin/users', { username: 'mallory', password: 'correct horse battery' }, headers)
    t.equal(create.status, 401, `POST /admin/users, ${label}: 401`)
  }
  t.equal(await store.getUserByName('mallory'), undefined, 'no refused request created anything')
  const right = { authorization: `Bearer ${token}` }
  t.equal((await call(admin, 'GET', '/admin/clients', undefined, right)).status, 200, 'the right token: 200')
  t.equal((await call(admin, 'POST', '/admin/users', { username: 'mallory', password: 'correct horse battery' }, right)).status, 201, 'and the action is done')
  assertNotFound(t, await call(admin, 'DELETE', '/admin/users/nobody', undefined, right), 'with the token, an unknown user is a 404')
})

t.test('a fault of ours: a 500 with nothing internal in it, the cause in the log', async (t) => {
  const store = new MemoryStore()
  t.teardown(async () => await store.close())
  store.listClients = async () => { throw new TypeError('secret internal detail') }
  const log = memoryLog()
  const admin = await buildAdminServer({
    metrics: async () => ({ contentType: 'text/plain', text: '' }),
    store,
    api: { registry: new ScopeRegistry(), events: new AuditEvents() },
    log: pino({ level: 'error' }, log.stream)
  })
  t.teardown(async () => await admin.close())
  const answer = await call(admin, 'GET', '/admin/clients')
  t.same({ status: answer.status, body: answer.body }, { status: 500, body: { error: 'internal', message: 'internal error' } })
  t.match(log.lines.find((line) => line.msg === 'admin API failed'), { level: 50, err: { type: 'TypeError', message: 'secret internal detail' } }, 'the cause logged')
})

t.test('the store down: every admin endpoint answers 503 store_unavailable', { skip: process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== '' ? 'stops Redis: needs a redis-server of its own' : false }, async (t) => {
  const redis = await startRedis(t)
  const { app, store } = await buildTestApp(t, { store: 'redis', redis })
  const admin = await adminFor(t, app)
  const client = await addClient(store)
  await addUser(store, 'erin')
  t.equal((await call(admin, 'GET', '/admin/clients')).status, 200, 'up: 200')
  await redis.stop()
  const calls: Array<[InjectOptions['method'], string, unknown?]> = [
    ['GET', '/admin/clients'],
    ['POST', '/admin/clients', { name: 'X', redirect_uris: [REDIRECT_URI] }],
    ['DELETE', `/admin/clients/${client.clientId}`],
    ['POST', `/admin/clients/${client.clientId}/secret`, { grace_seconds: 0 }],
    ['POST', '/admin/users', { username: 'frank', password: 'correct horse battery' }],
    ['DELETE', '/admin/users/erin'],
    ['DELETE', '/admin/users/nobody'],
    ['PUT', '/admin/users/erin/password', { password: 'a brand new password' }],
    ['GET', '/admin/users/erin/grants'],
    ['DELETE', '/admin/users/erin/grants/g1']
  ]
  for (const [method, url, body] of calls) {
    const started = Date.now()
    const answer = await call(admin, method, url, body)
    t.equal(answer.status, 503, `${method} ${url}: 503 (got ${answer.status} ${JSON.stringify(answer.body)}, ${Date.now() - started} ms)`)
    t.equal(answer.body?.error, 'store_unavailable')
  }
})
