import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import {
  TokenEndpointError,
  createSignedFetch,
  parseImplicitFragment,
  parseTokenResponse,
  signRequest
} from '../../../plugin/client/index.ts'
import { parseMacHeader } from '../../../plugin/mac/header.ts'
import { canonicalQuery, computeMac, unixMinute, stringToSign } from '../../../plugin/mac/signature.ts'

const MAC_KEY = 'ORhx44qK6Alqf8vt2rGB5f-oPq0'

// What the gateway does with a request: parse the header and recompute the mac from what arrived.
function verify (header: string, request: { method: string, host: string, target: string }, macKey = MAC_KEY): boolean {
  const parsed = parseMacHeader(header)
  const [path = '', query = ''] = request.target.split(/\?(.*)/s)
  const text = stringToSign({ nonce: parsed.nonce, method: request.method, host: request.host, path, query: canonicalQuery(query) })
  return computeMac(macKey, text) === parsed.mac
}

t.test('signRequest reproduces the documentation vector', async (t) => {
  const header = signRequest({
    method: 'get',
    url: 'https://open.account.xiaomi.com/user/profile?token=eJxjYGAQydknLLCFsVyIR-DxSqdTnQFGfX4yDAwMjAzxQJIheJfnRTDtvAhMM8SE_2FgWDw7Rg3MYzdUMFIwVjABMplzE5MBClYRuw&clientId=179887661252608',
    accessToken: 'tok',
    macKey: MAC_KEY,
    nonce: '2870867952176701445:23282360'
  })
  t.equal(header, 'MAC access_token="tok", nonce="2870867952176701445%3A23282360", mac="vLXZ8fqoGPik4yqDj2XP2Mbd%2Bis%3D"')
})

t.test('signRequest round-trip through parseMacHeader', async (t) => {
  const url = new URL('http://API.example.com:8080/a%20b/c?z=2&a=x+y&a=%E4%B8%AD&e=')
  const header = signRequest({ method: 'POST', url, accessToken: 'a"b,c=d', macKey: 'k' })
  const parsed = parseMacHeader(header)
  t.equal(parsed.accessToken, 'a"b,c=d', 'awkward token survives the quoting')
  t.ok(Math.abs(parsed.minutes - unixMinute()) <= 1, 'fresh nonce for the current minute')
  const expected = computeMac('k', `${parsed.nonce}\nPOST\napi.example.com\n/a%20b/c\na=x y&a=中&e=&z=2\n`)
  t.equal(parsed.mac, expected)
  t.ok(verify(header, { method: 'POST', host: 'api.example.com:8080', target: '/a%20b/c?z=2&a=x+y&a=%E4%B8%AD&e=' }, 'k'))
  t.notOk(verify(header, { method: 'GET', host: 'api.example.com', target: '/a%20b/c?z=2&a=x+y&a=%E4%B8%AD&e=' }, 'k'), 'method is signed')
  t.notOk(verify(header, { method: 'POST', host: 'api.example.com', target: '/a%20b/c?z=3&a=x+y&a=%E4%B8%AD&e=' }, 'k'), 'query is signed')

  const ipv6 = parseMacHeader(signRequest({ method: 'GET', url: 'http://[::1]:9/x', accessToken: 't', macKey: 'k', nonce: '-1:5' }))
  t.equal(ipv6.mac, computeMac('k', '-1:5\nGET\n[::1]\n/x\n\n'), 'IPv6 host without port, empty query')
  t.throws(() => signRequest({ method: 'GET', url: '/relative', accessToken: 't', macKey: 'k' }), TypeError, 'needs an absolute URL')
})

t.test('createSignedFetch against a local server', async (t) => {
  const seen: Array<{ method: string, target: string, headers: IncomingHttpHeaders }> = []
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', target: req.url ?? '', headers: req.headers })
    res.end('ok')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const signedFetch = createSignedFetch({ accessToken: 'tok/1', macKey: MAC_KEY })
  const first = await signedFetch(`${base}/user/profile?clientId=7&token=tok%2F1`)
  t.equal(await first.text(), 'ok')
  await signedFetch(new URL(`${base}/user/openidV2`), { method: 'POST', body: 'x=1', headers: { 'x-extra': 'kept' } })

  t.equal(seen.length, 2)
  for (const request of seen) {
    const header = request.headers.authorization ?? ''
    t.match(header, /^MAC access_token="tok%2F1", nonce="-?[0-9]+%3A[0-9]+", mac="[^"]+"$/)
    t.ok(verify(header, { method: request.method, host: request.headers.host ?? '', target: request.target }), `${request.method} ${request.target} verifies`)
  }
  t.equal(seen[0]?.method, 'GET', 'method defaults to GET')
  t.equal(seen[1]?.headers['x-extra'], 'kept', 'caller headers are kept')
  t.not(parseMacHeader(seen[0]?.headers.authorization ?? '').nonce, parseMacHeader(seen[1]?.headers.authorization ?? '').nonce, 'a fresh nonce each call')
})

t.test('createSignedFetch uses the fetch it is given and replaces an Authorization header', async (t) => {
  const calls: Array<[string | URL | Request, RequestInit | undefined]> = []
  const fakeFetch: typeof fetch = async (input, init) => {
    calls.push([input, init])
    return new Response('fake')
  }
  const signedFetch = createSignedFetch({ accessToken: 't', macKey: 'k', fetch: fakeFetch })
  const response = await signedFetch('https://api.example.com/p?b=2&a=1', { method: 'DELETE', headers: [['Authorization', 'Bearer old']] })
  t.equal(await response.text(), 'fake')
  const [input, init] = calls[0] ?? []
  t.equal(input, 'https://api.example.com/p?b=2&a=1')
  t.equal(init?.method, 'DELETE')
  const header = new Headers(init?.headers).get('authorization') ?? ''
  t.ok(verify(header, { method: 'DELETE', host: 'api.example.com', target: '/p?b=2&a=1' }, 'k'))
})

const SUCCESS = {
  access_token: 'AT',
  expires_in: 7776000,
  refresh_token: 'RT',
  scope: '1 3',
  token_type: 'mac',
  mac_key: 'MK',
  mac_algorithm: 'HmacSha1',
  openId: 'OID'
}

t.test('parseTokenResponse', async (t) => {
  t.same(parseTokenResponse(`&&&START&&&${JSON.stringify(SUCCESS)}`), SUCCESS, 'with the prefix')
  t.same(parseTokenResponse(JSON.stringify(SUCCESS)), SUCCESS, 'without the prefix')
  t.same(parseTokenResponse(JSON.stringify({ ...SUCCESS, mac_algorithm: 'HMACSHA1', token_type: 'MAC' })),
    { ...SUCCESS, mac_algorithm: 'HMACSHA1', token_type: 'MAC' }, 'HMACSHA1 and MAC spellings')
  const { refresh_token: _r, openId: _o, ...bare } = SUCCESS
  const minimal = parseTokenResponse(JSON.stringify({ ...bare, scope: '' }))
  t.same(minimal, { ...bare, scope: '' }, 'no refresh_token, no openId, empty scope')
  t.notOk('refresh_token' in minimal)
  t.equal(parseTokenResponse(JSON.stringify({ ...SUCCESS, expires_in: '3600' })).expires_in, 3600, 'numeric string expires_in')

  t.throws(() => parseTokenResponse('&&&START&&&{"error":96013,"error_description":"code invalid or expired"}'),
    new TokenEndpointError(96013, 'code invalid or expired'))
  t.throws(() => parseTokenResponse('{"error":"96003"}'), TokenEndpointError, 'numeric string code')
  t.throws(() => parseTokenResponse('{"error":"96003"}'),
    { errno: 96003, description: '96003', name: 'TokenEndpointError', message: 'authorization server error 96003: 96003' })
  t.throws(() => parseTokenResponse('{"error":"invalid_grant","error_description":"nope"}'), { name: 'TokenEndpointError', errno: 0, description: 'nope' }, 'non-numeric code')

  const malformed = (body: string, message: RegExp, why: string): void => {
    t.throws(() => parseTokenResponse(body), { name: 'Error', message }, why)
  }
  malformed(JSON.stringify({ ...SUCCESS, mac_algorithm: 'HmacMd5' }), /mac_algorithm HmacMd5 is not HmacSha1 or HmacSha256/, 'bad algorithm')
  t.equal(parseTokenResponse(JSON.stringify({ ...SUCCESS, mac_algorithm: 'HmacSha256' })).mac_algorithm, 'HmacSha256', 'HmacSha256, the opt-in, is accepted')
  malformed(JSON.stringify({ ...SUCCESS, token_type: 'bearer' }), /token_type bearer is not mac/, 'bearer token')
  malformed(JSON.stringify({ ...SUCCESS, access_token: '' }), /access_token missing/, 'empty token')
  malformed(JSON.stringify({ ...SUCCESS, mac_key: 5 }), /mac_key missing/, 'non-string mac_key')
  malformed(JSON.stringify({ ...SUCCESS, scope: undefined }), /scope missing/, 'no scope')
  malformed(JSON.stringify({ ...SUCCESS, openId: '' }), /openId missing/, 'empty openId')
  malformed(JSON.stringify({ ...SUCCESS, expires_in: -1 }), /expires_in/, 'negative lifetime')
  malformed(JSON.stringify({ ...SUCCESS, expires_in: 1.5 }), /expires_in/, 'fractional lifetime')
  malformed(JSON.stringify({ ...SUCCESS, expires_in: '1h' }), /expires_in/, 'text lifetime')
  malformed(JSON.stringify({ ...SUCCESS, expires_in: null }), /expires_in/, 'null lifetime')
  malformed('&&&START&&&<html>', /not JSON/, 'HTML body')
  malformed('null', /not a JSON object/, 'null')
  malformed('[1]', /not a JSON object/, 'array')
  malformed('"text"', /not a JSON object/, 'string')
})

t.test('parseImplicitFragment', async (t) => {
  const contract = 'https://app.example/cb#access_token=..&token_type=mac&expires_in=7776000&scope=1%203&mac_key=..&mac_algorithm=HmacSHA1&state=xyz'
  const expected = { access_token: '..', token_type: 'mac', expires_in: 7776000, scope: '1 3', mac_key: '..', mac_algorithm: 'HmacSHA1', state: 'xyz' }
  t.same(parseImplicitFragment(contract), expected, 'the contract example')
  t.same(parseImplicitFragment(contract.slice(contract.indexOf('#') + 1)), expected, 'the fragment alone')
  t.same(parseImplicitFragment(contract.slice(contract.indexOf('#'))), expected, 'location.hash with its #')
  t.same(parseImplicitFragment('access_token=A%2BB&token_type=mac&expires_in=60&scope=&mac_key=k+y&mac_algorithm=HmacSha1'),
    { access_token: 'A+B', token_type: 'mac', expires_in: 60, scope: '', mac_key: 'k y', mac_algorithm: 'HmacSha1' }, 'form-decoded, no state')

  t.throws(() => parseImplicitFragment('https://app.example/cb#error=96012&error_description=access%20denied&state=xyz'),
    { name: 'TokenEndpointError', errno: 96012, description: 'access denied' }, 'error in the fragment')
  t.throws(() => parseImplicitFragment('https://app.example/cb?error=96007&error_description=invalid+scope&state=xyz'),
    { name: 'TokenEndpointError', errno: 96007, description: 'invalid scope' }, 'error in the query, as the contract redirects it')
  t.throws(() => parseImplicitFragment('https://app.example/cb?error=96011#'), { name: 'TokenEndpointError', errno: 96011, description: '96011' }, 'empty fragment')
  t.throws(() => parseImplicitFragment('https://app.example/cb?x=1'), /access_token missing/, 'URL without fragment')
  t.throws(() => parseImplicitFragment('https://app.example/cb?error=1#access_token=a'), /token_type missing/, 'a query error does not override a fragment')

  const base = 'access_token=a&token_type=mac&expires_in=60&scope=1&mac_key=k&mac_algorithm=HmacSha1'
  t.throws(() => parseImplicitFragment(base.replace('HmacSha1', 'HmacMd5')), /mac_algorithm HmacMd5 is not HmacSha1 or HmacSha256/)
  t.throws(() => parseImplicitFragment(base.replace('&mac_key=k', '')), /mac_key missing/)
  t.throws(() => parseImplicitFragment(base.replace('60', 'soon')), /expires_in/)
  t.throws(() => parseImplicitFragment(`${base}&access_token=evil`), /access_token given more than once/)
  t.throws(() => parseImplicitFragment(`${base}&state=`), /state missing/, 'empty state')
  t.same(parseImplicitFragment(`${base}&toString=1&__proto__=2`).access_token, 'a', 'odd parameter names are harmless')
})
