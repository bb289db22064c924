// macDebug: a "mac does not match" answer shows the server's string to sign, and the client helper
// explains its own, so that a client developer sees which line differs. Off by default.
import t, { type Test } from 'tap'
import { explainSignature, signRequest } from '../../../plugin/client/index.ts'
import { grantAccessToken } from '../../../plugin/index.ts'
import { addClient, buildTestApp } from '../../helpers/app.ts'

async function setup (t: Test, macDebug?: boolean) {
  const { app, store } = await buildTestApp(t, macDebug === undefined ? {} : { macDebug })
  const { clientId } = await addClient(store)
  const { accessToken, macKey } = await grantAccessToken(app.macgate, { clientId, userId: 'u1', scope: ['1', '3'] })
  return { app, accessToken, macKey }
}

t.test('on: the mismatch carries string_to_sign, never the key or the expected mac', async (t) => {
  const { app, accessToken, macKey } = await setup(t, true)
  const nonce = `${Math.floor(Math.random() * 1e9)}:${Math.floor(Date.now() / 60000)}`
  // The client signed for port 8443 and a different query order than it sent: hosts match (no port),
  // the query is canonical on both sides, so only the path differs.
  const signedUrl = 'https://api.example.com:8443/user/profile2?b=2&a=1'
  const authorization = signRequest({ method: 'GET', url: signedUrl, accessToken, macKey, nonce })
  const answer = await app.inject({ method: 'GET', url: '/user/profile?a=1&b=2', headers: { host: 'api.example.com', authorization } })
  t.equal(answer.statusCode, 401)
  const body = answer.json() as { result: string, description: string, code: number, string_to_sign: string }
  t.match(body, { result: 'error', description: 'mac does not match', code: 96012 })
  t.equal(body.string_to_sign, `${nonce}\nGET\napi.example.com\n/user/profile\na=1&b=2\n`)
  const mine = explainSignature({ method: 'GET', url: signedUrl, nonce })
  t.equal(mine, `${nonce}\nGET\napi.example.com\n/user/profile2\na=1&b=2\n`, 'the client explains its own: the path line differs')
  t.notMatch(answer.body, macKey, 'never the key')
  t.notMatch(answer.body, /"mac"/, 'never the expected mac')

  const right = signRequest({ method: 'GET', url: 'http://api.example.com/user/profile?a=1&b=2', accessToken, macKey })
  const ok = await app.inject({ method: 'GET', url: '/user/profile?a=1&b=2', headers: { host: 'api.example.com', authorization: right } })
  t.equal(ok.statusCode, 200, 'a right signature passes as ever')
  const stale = signRequest({ method: 'GET', url: 'http://api.example.com/user/profile', accessToken, macKey, nonce: '1:1' })
  const staleAnswer = (await app.inject({ method: 'GET', url: '/user/profile', headers: { host: 'api.example.com', authorization: stale } })).json() as Record<string, unknown>
  t.equal(staleAnswer.string_to_sign, undefined, 'only a mismatch explains itself')
})

t.test('off by default: the mismatch says only that', async (t) => {
  const { app, accessToken, macKey } = await setup(t)
  const authorization = signRequest({ method: 'GET', url: 'http://api.example.com/other', accessToken, macKey })
  const answer = await app.inject({ method: 'GET', url: '/user/profile', headers: { host: 'api.example.com', authorization } })
  t.strictSame(answer.json(), { result: 'error', description: 'mac does not match', code: 96012 })
})
