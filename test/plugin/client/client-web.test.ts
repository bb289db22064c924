// The Web Crypto signer and the sign-in helpers of macgate/client, in Node (which has
// globalThis.crypto as browsers do): both signers against the shared request vectors, and the helpers
// against a real local token endpoint. The same vectors run in Chromium in apps-without-server.test.ts.
import { once } from 'node:events'
import { createHash } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import {
  AuthorizationError,
  RevocationError,
  TokenEndpointError,
  beginAuthorization,
  completeAuthorization,
  computeMac,
  computeMacAsync,
  createWebSignedFetch,
  refreshTokens,
  revokeToken,
  signRequest,
  signRequestAsync,
  type AuthorizationStorage
} from '../../../plugin/client/index.ts'
import * as browserEntry from '../../../plugin/client/browser.ts'
import { parseMacHeader } from '../../../plugin/mac/header.ts'
import { unixMinute } from '../../../plugin/mac/signature.ts'
import { REQUEST_VECTORS as VECTORS, type RequestVector } from '../../helpers/client-vectors.ts'

const optionsOf = (vector: RequestVector) => ({
  method: vector.method,
  url: vector.url,
  accessToken: vector.access_token,
  macKey: vector.mac_key,
  nonce: vector.nonce,
  ...(vector.mac_algorithm !== undefined && { macAlgorithm: vector.mac_algorithm })
})

t.test('both signers reproduce every shared vector', async (t) => {
  t.ok(VECTORS.length >= 9)
  for (const vector of VECTORS) {
    t.equal(signRequest(optionsOf(vector)), vector.header, `node:crypto: ${vector.source}`)
    t.equal(await signRequestAsync(optionsOf(vector)), vector.header, `Web Crypto: ${vector.source}`)
    t.equal(await browserEntry.signRequestAsync(optionsOf(vector)), vector.header, `the browser entry: ${vector.source}`)
    t.equal(browserEntry.explainSignature({ method: vector.method, url: vector.url, nonce: vector.nonce }), vector.string, `the string to sign: ${vector.source}`)
    t.equal(await computeMacAsync(vector.mac_key, vector.string, vector.mac_algorithm), vector.mac)
  }
  t.equal(browserEntry.createSignedFetch, browserEntry.createWebSignedFetch, 'the browser\'s createSignedFetch signs on Web Crypto')
})

t.test('the Web Crypto signer: fresh nonces, and an empty key refused plainly', async (t) => {
  const header = await signRequestAsync({ method: 'GET', url: 'https://api.example.com/p', accessToken: 't', macKey: 'k' })
  const parsed = parseMacHeader(header)
  t.ok(Math.abs(parsed.minutes - unixMinute()) <= 1, 'a nonce for the current minute')
  t.match(parsed.nonce, /^-?[0-9]{1,19}:[0-9]+$/)
  t.equal(parsed.mac, computeMac('k', `${parsed.nonce}\nGET\napi.example.com\n/p\n\n`))
  const nonces = new Set(Array.from({ length: 50 }, () => browserEntry.makeNonce(0).split(':')[0]))
  t.equal(nonces.size, 50, 'random parts differ')
  t.equal(browserEntry.makeNonce(120_000).split(':')[1], '2', 'minutes of the given time')
  await t.rejects(signRequestAsync({ method: 'GET', url: 'https://a.example/', accessToken: 't', macKey: '' }), { name: 'TypeError', message: 'macKey is empty' })
})

t.test('createWebSignedFetch signs each call with a fresh nonce, with the key imported once', async (t) => {
  const seen: Array<{ url: string, method: string, authorization: string, extra: string | null }> = []
  const fakeFetch: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers)
    seen.push({ url: String(input), method: init?.method ?? 'GET', authorization: headers.get('authorization') ?? '', extra: headers.get('x-extra') })
    return new Response('ok')
  }
  const signedFetch = createWebSignedFetch({ accessToken: 'tok', macKey: 'key', macAlgorithm: 'HmacSha256', fetch: fakeFetch })
  t.equal(await (await signedFetch('https://api.example.com/a?b=2&a=1', { headers: { 'x-extra': 'kept', authorization: 'Bearer old' } })).text(), 'ok')
  await signedFetch(new URL('https://api.example.com/b'), { method: 'POST', body: 'x' })
  t.equal(seen[0]?.extra, 'kept', 'caller headers are kept')
  t.equal(seen[1]?.method, 'POST')
  for (const [index, path] of ['/a\na=1&b=2', '/b\n'].entries()) {
    const header = parseMacHeader(seen[index]?.authorization ?? '')
    t.equal(header.accessToken, 'tok')
    const method = index === 0 ? 'GET' : 'POST'
    t.equal(header.mac, computeMac('key', `${header.nonce}\n${method}\napi.example.com\n${path}\n`, 'sha256'), `${method} signed with SHA-256`)
  }
  t.not(parseMacHeader(seen[0]!.authorization).nonce, parseMacHeader(seen[1]!.authorization).nonce, 'a fresh nonce each call')
  const failing = createWebSignedFetch({ accessToken: 't', macKey: '', fetch: fakeFetch })
  await t.rejects(failing('https://api.example.com/'), { message: 'macKey is empty' }, 'the key\'s failure reaches the caller')
})

/** sessionStorage's three methods over a Map: what a tab keeps across the redirect. */
function tabStorage (): AuthorizationStorage & { items: Map<string, string> } {
  const items = new Map<string, string>()
  return { items, getItem: (key) => items.get(key) ?? null, setItem: (key, value) => { items.set(key, value) }, removeItem: (key) => { items.delete(key) } }
}

const TOKENS = { access_token: 'AT', expires_in: 7776000, refresh_token: 'RT', scope: '1 3', token_type: 'mac', mac_key: 'MK', mac_algorithm: 'HmacSha1', openId: 'OID' }

/** A token and revocation endpoint that checks PKCE as the gateway does, and records each form. */
async function startTokenServer (t: Test) {
  const forms: Array<{ path: string, form: URLSearchParams }> = []
  let challenge = ''
  const server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk) => { body += String(chunk) })
    request.on('end', () => {
      const form = new URLSearchParams(body)
      forms.push({ path: request.url ?? '', form })
      if (request.url === '/base/oauth2/revoke') {
        if (form.get('client_id') === 'bad') return response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}')
        if (form.get('client_id') === 'broken') return response.writeHead(500).end('<html>')
        return response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      }
      const verifier = form.get('code_verifier') ?? ''
      const pkce = form.get('grant_type') !== 'authorization_code' || createHash('sha256').update(verifier).digest('base64url') === challenge
      if (!pkce) return response.writeHead(400).end('&&&START&&&{"error":96004,"error_description":"code_verifier does not match"}')
      response.writeHead(200, { 'content-type': 'application/json;charset=UTF-8' }).end(`&&&START&&&${JSON.stringify(TOKENS)}`)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  return { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}/base`, forms, expect: (value: string) => { challenge = value } }
}

const APP = { clientId: '1234567890123456789', redirectUri: 'http://127.0.0.1:9/app/' }

t.test('the code grant with PKCE: begin, come back, exchange', async (t) => {
  const endpoint = await startTokenServer(t)
  const storage = tabStorage()
  const url = new URL(await beginAuthorization({ ...APP, server: endpoint.server, scope: '1 3', parameters: { skip_confirm: 'true', state: 'ignored' }, storage }))
  t.equal(`${url.origin}${url.pathname}`, `${endpoint.server}/oauth2/authorize`, 'the authorize endpoint under the server\'s base URL')
  const query = url.searchParams
  t.same([query.get('client_id'), query.get('redirect_uri'), query.get('response_type'), query.get('scope'), query.get('skip_confirm'), query.get('code_challenge_method')],
    [APP.clientId, APP.redirectUri, 'code', '1 3', 'true', 'S256'])
  t.match(query.get('state'), /^[A-Za-z0-9_-]{22}$/, 'a random state, not the one a parameter tried to set')
  t.match(query.get('code_challenge'), /^[A-Za-z0-9_-]{43}$/)
  const pending = JSON.parse(storage.items.get('macgate.authorization') ?? '{}') as Record<string, string>
  t.match(pending.verifier, /^[A-Za-z0-9_-]{43}$/, 'the verifier stays in the tab')
  t.notOk(url.toString().includes(pending.verifier!), 'and never leaves it')
  t.equal(createHash('sha256').update(pending.verifier!).digest('base64url'), query.get('code_challenge'), 'the challenge is S256 of the verifier')
  endpoint.expect(query.get('code_challenge')!)

  const tokens = await completeAuthorization({ url: `${APP.redirectUri}?code=C0DE&state=${query.get('state')}`, storage })
  t.same(tokens, TOKENS)
  t.same(Object.fromEntries(endpoint.forms[0]!.form), {
    grant_type: 'authorization_code', code: 'C0DE', code_verifier: pending.verifier, client_id: APP.clientId, redirect_uri: APP.redirectUri, token_type: 'mac'
  }, 'the exchange of a public client: client_id and code_verifier, no secret')
  t.equal(endpoint.forms[0]!.path, '/base/oauth2/token')
  t.equal(storage.items.size, 0, 'the pending authorization is spent')
  await t.rejects(completeAuthorization({ url: `${APP.redirectUri}?code=C0DE&state=${query.get('state')}`, storage }),
    new AuthorizationError('not-started', 'no authorization was started in this tab'), 'a reload cannot replay it')

  // A wrong verifier (another tab's authorization) comes back as the server's code.
  const again = new URL(await beginAuthorization({ ...APP, server: `${endpoint.server}/`, storage }))
  t.equal(again.searchParams.get('scope'), null, 'no scope: the client\'s defaults')
  await t.rejects(completeAuthorization({ url: `${APP.redirectUri}?code=C0DE&state=${again.searchParams.get('state')}`, storage }),
    { name: 'TokenEndpointError', errno: 96004 })
})

t.test('completeAuthorization refuses what this tab did not ask for', async (t) => {
  const storage = tabStorage()
  const begin = async (responseType: 'code' | 'token') => new URL(await beginAuthorization({ ...APP, server: 'http://127.0.0.1:9', responseType, storage })).searchParams.get('state')!
  const refused = async (url: string, expected: Error | { name: string, reason?: string, errno?: number, description?: string }, why: string) => {
    await t.rejects(completeAuthorization({ url, storage, fetch: async () => { throw new Error('no exchange expected') } }), expected, why)
  }
  let state = await begin('code')
  await refused(`${APP.redirectUri}?code=C&state=other`, { name: 'AuthorizationError', reason: 'state-mismatch' }, 'another state')
  t.equal(storage.items.size, 0, 'a refused answer spends the pending authorization too')
  state = await begin('code')
  await refused(`${APP.redirectUri}?code=C&state=${state}&state=${state}`, { name: 'AuthorizationError', reason: 'state-mismatch' }, 'the state twice')
  state = await begin('code')
  await refused(`${APP.redirectUri}?code=C`, { name: 'AuthorizationError', reason: 'state-mismatch' }, 'no state')
  state = await begin('code')
  await refused(`${APP.redirectUri}?state=${state}`, new AuthorizationError('no-code', 'the answer carries no code'), 'no code')
  state = await begin('code')
  await refused(`${APP.redirectUri}?code=a&code=b&state=${state}`, { name: 'AuthorizationError', reason: 'no-code' }, 'two codes')
  state = await begin('code')
  await refused(`${APP.redirectUri}?error=96012&error_description=access%20denied&state=${state}`, new TokenEndpointError(96012, 'access denied'), 'the user denied')
  state = await begin('token')
  await refused(`${APP.redirectUri}?error=96005&state=${state}`, { name: 'TokenEndpointError', errno: 96005, description: '96005' }, 'the implicit grant\'s error, in the query')
  state = await begin('token')
  await refused(`${APP.redirectUri}?error=invalid_request&state=${state}`, { name: 'TokenEndpointError', errno: 0, description: 'invalid_request' }, 'a non-numeric error')
  state = await begin('token')
  await refused(`${APP.redirectUri}#access_token=A&token_type=mac&expires_in=60&scope=1&mac_key=K&mac_algorithm=HmacSha1&state=forged`,
    { name: 'AuthorizationError', reason: 'state-mismatch' }, 'a token this tab did not ask for')
  await refused(`${APP.redirectUri}`, { name: 'AuthorizationError', reason: 'not-started' }, 'nothing pending')
  await t.rejects(completeAuthorization(), { name: 'TypeError', message: /sessionStorage/ }, 'outside a browser the storage must be given')
  await t.rejects(completeAuthorization({ storage }), { name: 'TypeError', message: 'no page URL here: pass the url option' }, 'and the URL')
})

t.test('the implicit grant: the fragment read, the state checked, no exchange', async (t) => {
  const storage = tabStorage()
  const url = new URL(await beginAuthorization({ ...APP, server: 'http://127.0.0.1:9', responseType: 'token', scope: '1', storage }))
  t.equal(url.searchParams.get('response_type'), 'token')
  t.equal(url.searchParams.get('code_challenge'), null, 'no PKCE for the implicit grant')
  const state = url.searchParams.get('state')!
  const tokens = await completeAuthorization({ url: `${APP.redirectUri}#access_token=A&token_type=mac&expires_in=60&scope=1&mac_key=K&mac_algorithm=HmacSha1&state=${state}`, storage, fetch: async () => { throw new Error('no exchange') } })
  t.same(tokens, { access_token: 'A', token_type: 'mac', mac_algorithm: 'HmacSha1', expires_in: 60, scope: '1', mac_key: 'K' }, 'the tokens, without the state')
})

t.test('refresh and revoke by a public client', async (t) => {
  const endpoint = await startTokenServer(t)
  const client = { ...APP, server: endpoint.server }
  t.same(await refreshTokens({ ...client, refreshToken: 'RT', scope: '1' }), TOKENS)
  t.same(Object.fromEntries(endpoint.forms[0]!.form), { grant_type: 'refresh_token', refresh_token: 'RT', scope: '1', client_id: APP.clientId, redirect_uri: APP.redirectUri, token_type: 'mac' })
  await refreshTokens({ ...client, refreshToken: 'RT2' })
  t.notOk(endpoint.forms[1]!.form.has('scope'), 'no scope unless narrowing')
  await revokeToken({ server: endpoint.server, clientId: APP.clientId, token: 'AT' })
  t.same(Object.fromEntries(endpoint.forms[2]!.form), { client_id: APP.clientId, token: 'AT' }, 'client_id and the token, no secret')
  t.equal(endpoint.forms[2]!.path, '/base/oauth2/revoke')
  await t.rejects(revokeToken({ server: endpoint.server, clientId: 'bad', token: 'AT' }), new RevocationError('invalid_client', 401))
  await t.rejects(revokeToken({ server: endpoint.server, clientId: 'broken', token: 'AT' }), { name: 'RevocationError', error: 'unknown', status: 500 })
})

t.test('in a page: the tab\'s sessionStorage and the page\'s URL by default', async (t) => {
  const page = globalThis as { sessionStorage?: AuthorizationStorage, location?: { href: string } }
  const storage = tabStorage()
  page.sessionStorage = storage
  t.teardown(() => { delete page.sessionStorage; delete page.location })
  const state = new URL(await beginAuthorization({ ...APP, server: 'http://127.0.0.1:9', responseType: 'token' })).searchParams.get('state')
  t.equal(storage.items.size, 1, 'kept in the tab\'s sessionStorage')
  page.location = { href: `${APP.redirectUri}#access_token=A&token_type=mac&expires_in=60&scope=1&mac_key=K&mac_algorithm=HmacSha1&state=${state}` }
  t.match(await completeAuthorization(), { access_token: 'A', mac_key: 'K' }, 'read from the page\'s own URL')
  t.equal(storage.items.size, 0)
})
