// A client's own quota as an operator sets and reads it: `clients add/update --quota-per-minute`
// and `clients show` in-process on a Redis of the test's own, and the admin API's
// `quota_per_minute`; `clients show` counts what a gateway on the same Redis admitted.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { buildAdminServer } from '../../../gateway/index.ts'
import { buildTestApp } from '../../helpers/app.ts'
import { cliEnv } from '../../helpers/cli.ts'
import { liveToken, signedInject } from '../../helpers/gateway.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { startRedis } from '../../helpers/redis.ts'

const routes = [
  { path: '/user/profile', methods: ['GET'], scopes: ['1'], match: 'all' as const, quota: { perMinute: 600 } },
  { path: '/user/openidV2', methods: ['GET'], scopes: ['3'], match: 'all' as const }
]

t.test('clients add/update --quota-per-minute, clients show with this minute\'s use', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const directory = await mkdtemp(join(tmpdir(), 'macgate-quota-'))
  t.teardown(async () => await rm(directory, { recursive: true, force: true }))
  const config = join(directory, 'gateway.json')
  await writeFile(config, JSON.stringify({ upstream: 'http://127.0.0.1:9', routes }))

  const added = await runInProcess(['clients', 'add', '--name', 'Metered', '--redirect-uri', 'https://app.example/cb', '--quota-per-minute', '30', '--json'], env)
  t.equal(added.code, 0, added.stderr)
  const id = (JSON.parse(added.stdout) as { client_id: string }).client_id
  const shown = await runInProcess(['clients', 'show', id, '--config', config], env)
  t.equal(shown.code, 0, shown.stderr)
  t.match(shown.stdout, new RegExp(`^client_id: +${id}\nname: +Metered\nscope: +1 3\nquota: +30 a minute on every limited route\n  /user/profile: 0 of 30 this minute \\(its own limit\\)\n$`))
  t.notMatch(shown.stdout, /secret/i)

  const updated = await runInProcess(['clients', 'update', id, '--quota-per-minute', '0', '--json'], env)
  t.equal(updated.code, 0, updated.stderr)
  t.match(JSON.parse(updated.stdout), { id, quotaPerMinute: 0 })
  const asJson = JSON.parse((await runInProcess(['clients', 'show', id, '--config', config, '--json'], env)).stdout) as Record<string, unknown>
  t.same(asJson.quotas, [{ route: '/user/profile', perMinute: 0, from: 'client', used: 0 }])
  t.notOk('secretHash' in asJson)

  // --no-quota takes the client's own limit away: the route's default applies again.
  const unset = await runInProcess(['clients', 'update', id, '--no-quota', '--json'], env)
  t.equal(unset.code, 0, unset.stderr)
  t.notOk('quotaPerMinute' in JSON.parse(unset.stdout), 'no own limit left in the record')
  const defaulted = await runInProcess(['clients', 'show', id, '--config', config], env)
  t.match(defaulted.stdout, /quota: +route defaults\n {2}\/user\/profile: 0 of 600 this minute \(the route's default\)\n$/)

  // A gateway on the same Redis admits three requests of another client: `clients show` counts them.
  const { app } = await buildTestApp(t, { store: 'redis', redis, routes })
  const tokens = await liveToken(app)
  // This minute's count: a minute that turns between the requests and `clients show` splits them
  // over two windows, so the block runs again in the new one (a minute cannot turn twice in it).
  let counted = { stdout: '' }
  for (let attempt = 0; attempt < 2; attempt++) {
    const minute = Math.floor(Date.now() / 60_000)
    for (let i = 0; i < 3; i++) t.equal((await signedInject(app, { url: '/user/profile', token: tokens.accessToken, macKey: tokens.macKey })).statusCode, 200)
    counted = await runInProcess(['clients', 'show', tokens.clientId, '--config', config], env)
    if (Math.floor(Date.now() / 60_000) === minute) break
  }
  t.match(counted.stdout, /quota: +route defaults\n {2}\/user\/profile: 3 of 600 this minute \(the route's default\)\n$/)
  const sampleOnly = await runInProcess(['clients', 'show', tokens.clientId], env)
  t.match(sampleOnly.stdout, /\(no route of the config has a quota\)\n$/, 'without --config: the sample routes, none limited')

  const refusals: Array<[string[], RegExp]> = [
    [['clients', 'show', '1000000000000000000'], /^macgate: no client 1000000000000000000/],
    [['clients', 'show', id, '--config', join(directory, 'missing.json')], /^macgate: cannot read config file/],
    [['clients', 'update', id, '--quota-per-minute', '1.5'], /^macgate: --quota-per-minute must be a whole number/],
    [['clients', 'update', id, '--quota-per-minute', '2000000000'], /^macgate: quota per minute must be a whole number from 0 to 1000000000/],
    [['clients', 'update', id, '--quota-per-minute', '5', '--no-quota'], /^macgate: clients update takes --quota-per-minute or --no-quota, not both/]
  ]
  for (const [args, message] of refusals) {
    const run = await runInProcess(args, env)
    t.not(run.code, 0, args.join(' '))
    t.match(run.stderr, message, args.join(' '))
  }
})

t.test('the admin API: quota_per_minute at registration and by PATCH', async (t) => {
  const { app } = await buildTestApp(t)
  const admin: FastifyInstance = await buildAdminServer({
    metrics: async () => ({ contentType: 'text/plain', text: '' }),
    store: app.macgate.store,
    api: { registry: app.macgate.registry, events: app.macgate.events }
  })
  t.teardown(async () => await admin.close())
  const json = (body: unknown): { headers: Record<string, string>, payload: string } => ({ headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) })
  const created = await admin.inject({ method: 'POST', url: '/admin/clients', ...json({ name: 'A', redirect_uris: ['https://a.example/cb'], quota_per_minute: 100 }) })
  t.equal(created.statusCode, 201)
  t.equal(created.json().quota_per_minute, 100)
  const id = created.json().client_id as string
  const patched = await admin.inject({ method: 'PATCH', url: `/admin/clients/${id}`, ...json({ quota_per_minute: 5 }) })
  t.equal(patched.statusCode, 200)
  t.equal(patched.json().quota_per_minute, 5)
  const plain = await admin.inject({ method: 'POST', url: '/admin/clients', ...json({ name: 'B', redirect_uris: ['https://b.example/cb'] }) })
  t.notOk('quota_per_minute' in plain.json(), 'no own limit: the route defaults')
  const negative = await admin.inject({ method: 'PATCH', url: `/admin/clients/${id}`, ...json({ quota_per_minute: -1 }) })
  t.equal(negative.statusCode, 400)
  const removed = await admin.inject({ method: 'PATCH', url: `/admin/clients/${id}`, ...json({ quota_per_minute: null }) })
  t.equal(removed.statusCode, 200)
  t.notOk('quota_per_minute' in removed.json(), 'null removes the own limit: the route defaults')
  t.notOk('quotaPerMinute' in (await app.macgate.store.getClient(id))!, 'and the stored record has none')
})
