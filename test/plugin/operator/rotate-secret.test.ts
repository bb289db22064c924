// `macgate clients rotate-secret`: a new secret at once, the old one for the grace period only.
// The commands run through the CLI's own dispatch in process (helpers/in-process.ts), where the two
// seconds of grace are not spent loading TypeScript; cli.test.ts runs the command as a process.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { REDIRECT_URI } from '../../helpers/app.ts'
import { cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { buildGateway } from '../../../gateway/index.ts'
import { RedisStore } from '../../../plugin/index.ts'
import { issueTokens, refreshExchange, tokenRequest, type LiveGateway } from '../../helpers/live.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { startRedis } from '../../helpers/redis.ts'

const redis = await startRedis(t)
// The gateway's clock is stepped past the grace instead of waiting it out (the grace is a time in
// the client's record, compared with the plugin's clock; no Redis TTL involved).
const clock = steppedClock()
const gateway = await clockedGateway()
const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })

async function clockedGateway (): Promise<LiveGateway> {
  const store = await new RedisStore(redis.url, { prefix: redis.prefix }).connect()
  const app = await buildGateway({ store, secret: randomBytes(32).toString('base64url'), config: {}, clock: clock.now })
  const origin = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  return { app, store, origin }
}

async function addClient (): Promise<{ client_id: string, client_secret: string }> {
  const added = await runInProcess(['clients', 'add', '--name', 'Rotating', '--redirect-uri', REDIRECT_URI, '--json'], env)
  return JSON.parse(added.stdout) as { client_id: string, client_secret: string }
}

t.test('the old secret works for the grace period, then stops; the new one works at once', async (t) => {
  const { client_id: clientId, client_secret: old } = await addClient()
  const { tokens } = await issueTokens(gateway, clientId, old)
  const rotated = await runInProcess(['clients', 'rotate-secret', clientId, '--grace-seconds', '2', '--json'], env)
  t.equal(rotated.code, 0, rotated.stderr)
  const { client_id: sameId, client_secret: fresh } = JSON.parse(rotated.stdout) as { client_id: string, client_secret: string }
  t.equal(sameId, clientId)
  t.not(fresh, old)
  const byOld = await tokenRequest(gateway.origin, refreshExchange(clientId, old, tokens.refresh_token!))
  t.equal(byOld.status, 200, 'the old secret still authenticates during the grace period')
  const byNew = await tokenRequest(gateway.origin, refreshExchange(clientId, fresh, (byOld.body as { refresh_token: string }).refresh_token))
  t.equal(byNew.status, 200, 'the new one too')
  clock.step(2100)
  const late = await tokenRequest(gateway.origin, refreshExchange(clientId, old, (byNew.body as { refresh_token: string }).refresh_token))
  t.equal(late.status, 401)
  t.same(late.body, { error: 96003, error_description: 'client authentication failed' }, 'after it, the old secret is refused')
})

t.test('--grace-seconds 0 stops the old secret at once; text output; mistakes exit 2', async (t) => {
  const { client_id: clientId, client_secret: old } = await addClient()
  const { tokens } = await issueTokens(gateway, clientId, old)
  const rotated = await runInProcess(['clients', 'rotate-secret', clientId, '--grace-seconds', '0'], env)
  t.match(rotated.stdout, /^client_id: {5}\d+\nclient_secret: \S{43}\n\(the secret is shown only now; the previous one works for 0 more seconds\)\n$/)
  t.equal((await tokenRequest(gateway.origin, refreshExchange(clientId, old, tokens.refresh_token!))).status, 401)
  const unknown = await runInProcess(['clients', 'rotate-secret', '1000000000000000000'], env)
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, 'no client 1000000000000000000')
  const bad = await runInProcess(['clients', 'rotate-secret', clientId, '--grace-seconds=1.5'], env)
  t.equal(bad.code, 2)
  t.match(bad.stderr, '--grace-seconds must be whole seconds, 0 or more, not 1.5')
})
