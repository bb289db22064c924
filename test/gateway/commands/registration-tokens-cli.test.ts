// `macgate registration-tokens create/list/revoke`, in-process on a Redis of the test's own (the
// CLI's store), and a token it printed used at a gateway on that Redis.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { liveGateway } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'
import { createRegistrationToken, MemoryStore } from '../../../plugin/index.ts'

t.test('create, list, use, revoke', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })
  const gateway = await liveGateway(t, redis, randomBytes(32).toString('base64url'), { registration: 'token' })
  const registerWith = async (token: string): Promise<number> => (await fetch(`${gateway.origin}/oauth2/register`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['https://dev.example/cb'] })
  })).status

  const empty = await runInProcess(['registration-tokens', 'list'], env)
  t.equal(empty.stdout, 'no registration tokens (make one with `macgate registration-tokens create`)\n')

  const text = await runInProcess(['registration-tokens', 'create'], env)
  t.equal(text.code, 0, text.stderr)
  const [, id, token] = /^id: +(\S+)\ntoken: (\S+)\n\(the token is shown only now; 1 registration until \S+\)\n$/.exec(text.stdout) ?? []
  t.ok(id !== undefined && token !== undefined, text.stdout)
  const json = JSON.parse((await runInProcess(['registration-tokens', 'create', '--uses', '3', '--expires-in', '600', '--json'], env)).stdout) as Record<string, unknown>
  t.match(json, { id: /./, token: /^[A-Za-z0-9_-]{43}$/, uses: 3, uses_left: 3 })

  const listed = await runInProcess(['registration-tokens', 'list'], env)
  t.match(listed.stdout, new RegExp(`^ID +USES_LEFT +EXPIRES_AT\n${id!} +1/1 +\\S+Z\n${json.id as string} +3/3 +\\S+Z\n$`))
  t.notOk(listed.stdout.includes(token!) || listed.stdout.includes(json.token as string), 'no value listed')

  t.equal(await registerWith(token!), 201)
  t.equal(await registerWith(token!), 401, 'used up')
  t.equal(await registerWith(json.token as string), 201)
  const revoked = await runInProcess(['registration-tokens', 'revoke', json.id as string], env)
  t.equal(revoked.stdout, `revoked registration token ${json.id as string}\n`)
  t.equal(await registerWith(json.token as string), 401, 'revoked')
  t.strictSame(JSON.parse((await runInProcess(['registration-tokens', 'list', '--json'], env)).stdout), [])

  const refusals: Array<[string[], RegExp]> = [
    [['registration-tokens'], /^macgate: registration-tokens needs create, list or revoke\n/],
    [['registration-tokens', 'create', '--uses', '0'], /^macgate: --uses must be a whole number, 1 or more, not 0\n/],
    [['registration-tokens', 'create', '--expires-in', '1h'], /^macgate: --expires-in must be a whole number/],
    [['registration-tokens', 'create', '--expires-in', '99999999999'], /^macgate: expires in must be whole seconds from 1 to 31536000\n/],
    [['registration-tokens', 'revoke'], /^macgate: registration-tokens revoke needs exactly one token id/],
    [['registration-tokens', 'revoke', 'nope'], /^macgate: no registration token nope\n/],
    // An id starting with a dash (none made since ids avoid it; the test below) goes after `--`.
    [['registration-tokens', 'revoke', '-nope'], /^macgate: Unknown option '-n' for registration-tokens revoke \(it takes no options; an argument starting with a dash goes after --: registration-tokens revoke -- -ARGUMENT\)\n/],
    [['registration-tokens', 'revoke', '--', '-nope'], /^macgate: no registration token -nope\n/]
  ]
  for (const [args, message] of refusals) {
    const run = await runInProcess(args, env)
    t.equal(run.code, 2, args.join(' '))
    t.match(run.stderr, message, args.join(' '))
  }
})

t.test('ids never start with a dash, which a command line would read as an option', async (t) => {
  const store = new MemoryStore()
  t.teardown(async () => { await store.close() })
  // 1 id in 64 would start with one; 500 of them miss such an id with a chance of about 4 in 10,000.
  const ids = await Promise.all(Array.from({ length: 500 }, async () => (await createRegistrationToken(store)).record.id))
  t.same(ids.filter((id) => id.startsWith('-')), [])
  t.equal(new Set(ids).size, 500, 'and each is its own')
  t.ok(ids.every((id) => /^[A-Za-z0-9_][A-Za-z0-9_-]{11}$/.test(id)), 'twelve base64url characters')
})
