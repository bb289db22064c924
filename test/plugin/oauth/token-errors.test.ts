// The token endpoint's failures (contract sections 4 and 5): every error is
// `&&&START&&&{"error":N,"error_description":".."}` with its status and the JSON headers.
import t, { type Test } from 'tap'
import { addClient, buildTestApp, callToken, obtainCode, REDIRECT_URI } from '../../helpers/app.ts'
import { assertTokenError, assertTokenSet, basicAuth, codeParams, rawToken } from '../../helpers/token-checks.ts'

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

async function setup (t: Test, options: Parameters<typeof buildTestApp>[1] = {}) {
  const { app, store } = await buildTestApp(t, options)
  const client = await addClient(store)
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  return { app, store, client, code, params: codeParams(client, code) }
}

const without = (params: Record<string, string>, ...names: string[]): Record<string, string> =>
  Object.fromEntries(Object.entries(params).filter(([name]) => !names.includes(name)))

t.test('grant_type and client identification', async (t) => {
  const { app, client, params } = await setup(t)
  assertTokenError(t, await callToken(app, without(params, 'grant_type')), 96002)
  assertTokenError(t, await callToken(app, { ...params, grant_type: '' }), 96002)
  assertTokenError(t, await callToken(app, { ...params, grant_type: 'password' }), 96006)
  assertTokenError(t, await callToken(app, { ...params, grant_type: 'client_credentials' }), 96006)
  assertTokenError(t, await callToken(app, without(params, 'client_id')), 96002)
  assertTokenError(t, await callToken(app, without(params, 'client_secret')), 96002)
  for (const malformed of ['abc', '0123', '-5', '9223372036854775808', '1e18', `${client.clientId} `]) {
    assertTokenError(t, await callToken(app, { ...params, client_id: malformed }), 96002)
  }
  const unknown = await callToken(app, { ...params, client_id: '9223372036854775807' })
  assertTokenError(t, unknown, 96001, 401)
  t.equal(unknown.headers['www-authenticate'], undefined, 'no WWW-Authenticate without Basic')
  // Client authentication comes before the grant: a wrong secret with a garbage code is 96003.
  const wrong = await callToken(app, { ...params, client_secret: `${client.clientSecret}x`, code: 'garbage' })
  assertTokenError(t, wrong, 96003, 401)
  t.equal(wrong.headers['www-authenticate'], undefined, 'no WWW-Authenticate without Basic')
  // None of that spent the code.
  assertTokenSet(t, await callToken(app, params))
})

t.test('HTTP Basic failures', async (t) => {
  const { app, client, params } = await setup(t)
  const rest = without(params, 'client_id', 'client_secret')
  const wrong = await callToken(app, rest, { headers: { authorization: basicAuth(client.clientId, 'not-the-secret') } })
  assertTokenError(t, wrong, 96003, 401)
  t.match(wrong.headers['www-authenticate'], /^Basic( |$)/, 'WWW-Authenticate: Basic after Basic')
  const unknown = await callToken(app, rest, { headers: { authorization: basicAuth('1000000000000000001', client.clientSecret) } })
  assertTokenError(t, unknown, 96001, 401)
  t.match(unknown.headers['www-authenticate'], /^Basic( |$)/, 'WWW-Authenticate: Basic after Basic')
  const both = await callToken(app, { ...rest, client_secret: client.clientSecret }, { headers: { authorization: basicAuth(client.clientId, client.clientSecret) } })
  assertTokenError(t, both, 96002)
  const noColon = { authorization: `Basic ${Buffer.from(client.clientId).toString('base64')}` }
  assertTokenError(t, await callToken(app, rest, { headers: noColon }), 96002)
  const otherId = await callToken(app, { ...rest, client_id: '1000000000000000001' }, { headers: { authorization: basicAuth(client.clientId, client.clientSecret) } })
  assertTokenError(t, otherId, 96002)
  assertTokenSet(t, await callToken(app, rest, { method: 'POST', headers: { authorization: basicAuth(client.clientId, client.clientSecret) } }))
})

t.test('redirect_uri: missing or not matching 96010; another registered URI than the code\'s 96004', async (t) => {
  const other = 'https://app.example.com/other'
  const { app, store } = await buildTestApp(t)
  const client = await addClient(store, { redirectUris: [REDIRECT_URI, other] })
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  const params = codeParams(client, code)
  assertTokenError(t, await callToken(app, without(params, 'redirect_uri')), 96010)
  for (const uri of ['', 'https://evil.example.com/callback', `${REDIRECT_URI}/more`, 'https://app.example.com/Callback', `${REDIRECT_URI}#frag`, 'http://app.example.com/callback', 'https://app.example.com/x/../callback']) {
    assertTokenError(t, await callToken(app, { ...params, redirect_uri: uri }), 96010)
  }
  assertTokenError(t, await callToken(app, { ...params, redirect_uri: other }), 96004)
  assertTokenSet(t, await callToken(app, params))
})

t.test('code: missing 96002; unknown, forged or garbage 96013; another client\'s 96004', async (t) => {
  const { app, store, code, params } = await setup(t)
  assertTokenError(t, await callToken(app, without(params, 'code')), 96002)
  assertTokenError(t, await callToken(app, { ...params, code: '' }), 96002)
  const flipped = code.slice(0, -1) + (code.endsWith('A') ? 'B' : 'A')
  for (const bad of ['garbage', 'x'.repeat(100), flipped, `${code}x`, code.slice(0, 16)]) {
    assertTokenError(t, await callToken(app, { ...params, code: bad }), 96013, 400, 'code invalid or expired')
  }
  const thief = await addClient(store)
  assertTokenError(t, await callToken(app, codeParams(thief, code)), 96004)
  assertTokenSet(t, await callToken(app, params))
})

t.test('a parameter given twice is 96002, in the query, the body, or across both', async (t) => {
  const { app, client, params } = await setup(t)
  const form = new URLSearchParams(params).toString()
  const twice = `${form}&client_id=${client.clientId}`
  assertTokenError(t, await rawToken(app, { url: `/oauth2/token?${twice}` }), 96002)
  assertTokenError(t, await rawToken(app, { url: `/oauth2/token?${form}&code=other` }), 96002)
  assertTokenError(t, await rawToken(app, { method: 'POST', payload: twice, headers: FORM }), 96002)
  const inQuery = `client_id=${client.clientId}`
  assertTokenError(t, await rawToken(app, { method: 'POST', url: `/oauth2/token?${inQuery}`, payload: form, headers: FORM }), 96002)
  assertTokenSet(t, await callToken(app, params, { method: 'POST' }))
})

t.test('over-long and non-UTF-8 parameters are 96002', async (t) => {
  const { app, params } = await setup(t)
  assertTokenError(t, await callToken(app, { ...params, code: 'a'.repeat(5000) }), 96002)
  assertTokenError(t, await callToken(app, { ...params, client_secret: 'a'.repeat(5000) }), 96002)
  assertTokenError(t, await callToken(app, { ...params, redirect_uri: `${REDIRECT_URI}?${'a'.repeat(5000)}` }), 96002)
  const form = new URLSearchParams(params).toString()
  assertTokenError(t, await rawToken(app, { url: `/oauth2/token?${form}&state=%FF` }), 96002)
  assertTokenError(t, await rawToken(app, { url: `/oauth2/token?${form.replace('code=', 'code=%FF')}` }), 96002)
  assertTokenError(t, await rawToken(app, { method: 'POST', payload: `${form}&x=%C3%28`, headers: FORM }), 96002)
  assertTokenError(t, await rawToken(app, { method: 'POST', payload: `${form}&x=%`, headers: FORM }), 96002)
  assertTokenSet(t, await callToken(app, params))
})

t.test('tokenErrorStatus: 200 answers every error with HTTP 200', async (t) => {
  const { app, client, params } = await setup(t, { tokenErrorStatus: 200 })
  assertTokenError(t, await callToken(app, { ...params, code: 'garbage' }), 96013, 200)
  assertTokenError(t, await callToken(app, { ...params, client_secret: 'wrong' }), 96003, 200)
  assertTokenError(t, await callToken(app, { ...params, client_id: '1000000000000000001' }), 96001, 200)
  assertTokenError(t, await callToken(app, { ...params, grant_type: 'password' }), 96006, 200)
  assertTokenError(t, await callToken(app, without(params, 'redirect_uri')), 96010, 200)
  assertTokenError(t, await callToken(app, codeParams(client, 'garbage'), { method: 'POST' }), 96013, 200)
  assertTokenSet(t, await callToken(app, params))
})

t.test('other methods: 405 with a 96002 body and Allow: GET, POST', async (t) => {
  const { app, params } = await setup(t)
  const form = new URLSearchParams(params).toString()
  for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const) {
    const answer = await rawToken(app, { method, url: `/oauth2/token?${form}`, payload: form, headers: FORM })
    assertTokenError(t, answer, 96002, 405)
    t.equal(answer.headers.allow, 'GET, POST', `${method}: Allow`)
  }
  // HEAD must not run the GET handler: it would spend the code and throw the token set away.
  const head = await rawToken(app, { method: 'HEAD', url: `/oauth2/token?${form}` })
  t.equal(head.status, 405, 'HEAD /oauth2/token is refused')
  t.equal(head.headers.allow, 'GET, POST', 'HEAD: Allow')
  const after = await callToken(app, params)
  t.equal(after.status, 200, `the HEAD request did not spend the code (${after.raw})`)
})

t.test('a body that is not a form is a 4xx 96002, never a 500 and never a success', async (t) => {
  const { app, params } = await setup(t)
  for (const [type, payload] of [['application/json', '{bad'], ['application/json', '[]'], ['text/plain', new URLSearchParams(params).toString()], ['application/octet-stream', 'x']]) {
    const answer = await rawToken(app, { method: 'POST', payload, headers: { 'content-type': type! } })
    t.ok(answer.status >= 400 && answer.status < 500, `${type} ${payload!.slice(0, 10)}: status ${answer.status} is 4xx`)
    t.equal(answer.body.error, 96002, `${type}: 96002 (${answer.raw.slice(0, 100)})`)
    t.ok(answer.raw.startsWith('&&&START&&&{"error":96002,'), `${type}: the token endpoint's error body`)
  }
  // A JSON object with valid parameters is not taken as the parameters: forms only.
  const json = await rawToken(app, { method: 'POST', payload: JSON.stringify(params), headers: { 'content-type': 'application/json' } })
  t.ok(json.status >= 400 && json.status < 500, `a JSON body is refused (status ${json.status})`)
  t.equal(json.body.error, 96002, 'a JSON body is 96002')
})
