// `macgate clients add --public --allowed-origin` and `clients update`, in-process on a Redis of
// the test's own (the CLI's store), as an operator types them.
import t from 'tap'
import { cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { startRedis } from '../../helpers/redis.ts'

t.test('a public client with allowed origins, then updated; the refusals', async (t) => {
  const redis = await startRedis(t)
  const env = cliEnv({ REDIS_URL: redis.url, MACGATE_REDIS_PREFIX: redis.prefix })

  const json = await runInProcess(['clients', 'add', '--name', 'SPA', '--redirect-uri', 'http://127.0.0.1:5173/cb', '--public', '--allowed-origin', 'https://cdn.example', '--json'], env)
  t.equal(json.code, 0, json.stderr)
  const added = JSON.parse(json.stdout) as Record<string, unknown>
  t.strictSame(Object.keys(added), ['client_id', 'public'], '--json prints no secret')
  const id = added.client_id as string

  const text = await runInProcess(['clients', 'add', '--name', 'SPA 2', '--redirect-uri', 'https://spa.example/cb', '--public', '--response-types', 'code,token'], env)
  t.match(text.stdout, /^client_id: +\d+\n\(a public client: no secret; PKCE required; browser origins: https:\/\/spa\.example\)\n$/)
  t.notMatch(text.stdout, /client_secret/)

  const listed = JSON.parse((await runInProcess(['clients', 'list', '--json'], env)).stdout) as Array<Record<string, unknown>>
  t.match(listed.find((client) => client.id === id), { public: true, requirePkce: true, responseTypes: ['code'], allowedOrigins: ['https://cdn.example'] })
  t.match(listed.find((client) => client.name === 'SPA 2'), { public: true, responseTypes: ['code', 'token'] }, 'the implicit grant when asked for')
  const human = (await runInProcess(['clients', 'list'], env)).stdout
  t.match(human, new RegExp(`\n${id}  SPA +1 3 +code +code +public +required +no +HmacSha1 +https://cdn\\.example +http://127\\.0\\.0\\.1:5173/cb\n`))

  const updated = await runInProcess(['clients', 'update', id, '--allowed-origin', 'https://a.example', '--allowed-origin', 'https://b.example', '--response-types', 'code,token'], env)
  t.equal(updated.code, 0, updated.stderr)
  t.equal(updated.stdout, `updated client ${id}: redirect URIs http://127.0.0.1:5173/cb; response types code,token; grant types code,implicit; browser origins http://127.0.0.1:5173 https://a.example https://b.example\n`)
  const cleared = await runInProcess(['clients', 'update', id, '--no-allowed-origins', '--redirect-uri', 'https://new.example/cb', '--json'], env)
  t.match(JSON.parse(cleared.stdout), { id, redirectUris: ['https://new.example/cb'], public: true })
  t.notOk('allowedOrigins' in JSON.parse(cleared.stdout), 'no allowed origins left')
  t.notMatch(cleared.stdout, /secret/i, 'no secret hash printed')

  const refusals: Array<[string[], RegExp]> = [
    [['clients', 'update', id], /^macgate: clients update needs something to change/],
    [['clients', 'update', '--allowed-origin', 'https://a.example'], /^macgate: clients update needs exactly one client id/],
    [['clients', 'update', id, '--allowed-origin', 'https://a.example', '--no-allowed-origins'], /not both/],
    [['clients', 'update', id, '--allowed-origin', 'https://a.example/app'], /^macgate: allowed origin https:\/\/a\.example\/app must be an origin/],
    [['clients', 'update', '1000000000000000000', '--no-allowed-origins'], /^macgate: no client 1000000000000000000/],
    [['clients', 'rotate-secret', id], /^macgate: client \d+ is public: it has no secret/],
    [['clients', 'update', id, ...Array.from({ length: 21 }, (_, n) => ['--allowed-origin', `https://o${n}.example`]).flat()], /^macgate: at most 20 allowed origins/],
    [['clients', 'add', '--name', 'X', '--redirect-uri', 'https://x.example/cb', '--public', '--resource-server'], /resource server/]
  ]
  for (const [args, message] of refusals) {
    const run = await runInProcess(args, env)
    t.not(run.code, 0, args.join(' '))
    t.match(run.stderr, message, args.join(' '))
  }
})
