// HmacSha256, per client and opt-in: a client registered with it gets `"mac_algorithm":"HmacSha256"`
// and is verified with it; every other client stays on HmacSha1, the spec's only algorithm.
import t, { type Test } from 'tap'
import { parseImplicitFragment, parseTokenResponse, signRequest } from '../../../plugin/client/index.ts'
import { RegistrationError } from '../../../plugin/index.ts'
import { addClient, addUser, authorizeAndAllow, buildTestApp, callToken, InjectBrowser, obtainCode, REDIRECT_URI } from '../../helpers/app.ts'
import { cliEnv } from '../../helpers/cli.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { codeParams, refreshParams } from '../../helpers/token-checks.ts'

async function signedCall (app: Awaited<ReturnType<typeof buildTestApp>>['app'], token: { access_token: string, mac_key: string }, macAlgorithm?: string): Promise<number> {
  const authorization = signRequest({ method: 'GET', url: 'http://api.example.com/user/profile', accessToken: token.access_token, macKey: token.mac_key, ...(macAlgorithm !== undefined && { macAlgorithm }) })
  return (await app.inject({ method: 'GET', url: '/user/profile', headers: { host: 'api.example.com', authorization } })).statusCode
}

async function codeTokens (t: Test, macAlgorithm?: 'HmacSha1' | 'HmacSha256') {
  const { app, store } = await buildTestApp(t)
  const client = await addClient(store, macAlgorithm === undefined ? {} : { macAlgorithm })
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  const answer = await callToken(app, codeParams(client, code))
  return { app, client, answer, tokens: parseTokenResponse(answer.raw) }
}

t.test('a HmacSha256 client: the token says so, and only a SHA-256 signature passes', async (t) => {
  const { app, client, answer, tokens } = await codeTokens(t, 'HmacSha256')
  t.equal(answer.body.mac_algorithm, 'HmacSha256')
  t.equal(await signedCall(app, tokens, tokens.mac_algorithm), 200, 'signed with HMAC-SHA256')
  t.equal(await signedCall(app, tokens), 401, 'an HMAC-SHA1 signature of its token is refused')
  const refreshed = parseTokenResponse((await callToken(app, refreshParams(client, tokens.refresh_token!))).raw)
  t.equal(refreshed.mac_algorithm, 'HmacSha256', 'a refresh keeps it')
  t.equal(await signedCall(app, refreshed, 'HmacSha256'), 200)
})

t.test('the implicit grant too', async (t) => {
  const { app, store } = await buildTestApp(t)
  const client = await addClient(store, { macAlgorithm: 'HmacSha256' })
  const location = await authorizeAndAllow(new InjectBrowser(app), await addUser(store), { client_id: client.clientId, redirect_uri: REDIRECT_URI, response_type: 'token', scope: '1' })
  const grant = parseImplicitFragment(location.hash)
  t.equal(grant.mac_algorithm, 'HmacSha256')
  t.equal(await signedCall(app, grant, 'HmacSha256'), 200)
})

t.test('every other client stays on HmacSha1', async (t) => {
  for (const registered of [undefined, 'HmacSha1'] as const) {
    const { app, answer, tokens } = await codeTokens(t, registered)
    t.equal(answer.body.mac_algorithm, 'HmacSha1')
    t.equal(await signedCall(app, tokens), 200)
    t.equal(await signedCall(app, tokens, 'HmacSha256'), 401, 'a SHA-256 signature is refused')
  }
})

t.test('registration refuses any other algorithm, in the API and the CLI', async (t) => {
  const { store } = await buildTestApp(t)
  await t.rejects(addClient(store, { macAlgorithm: 'HmacMd5' as 'HmacSha1' }), new RegistrationError('mac algorithm must be HmacSha1 or HmacSha256'))
  const run = await runInProcess(['clients', 'add', '--name', 'X', '--redirect-uri', REDIRECT_URI, '--mac-algorithm', 'sha256'], cliEnv({ REDIS_URL: 'redis://127.0.0.1:1' }))
  t.equal(run.code, 2)
  t.match(run.stderr, '--mac-algorithm must be HmacSha1 or HmacSha256, not sha256', 'refused before reaching for the store')
})
