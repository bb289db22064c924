// The RFC 6749 token endpoint beside the Xiaomi one: the same grants on the same store, answered
// in plain JSON with §5.2 errors. A code is redeemed once across both endpoints, and a replay on
// either revokes what the other issued.
import { createHash, randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { STANDARD_TOKEN_PATH } from '../../../plugin/oauth/standard-token-endpoint.ts'
import { hashSecret } from '../../../plugin/access/credentials.ts'
import { addClient, addPublicClient, buildTestApp, callToken, obtainCode, REDIRECT_URI, SPA_ORIGIN, SPA_REDIRECT_URI, type TokenAnswer } from '../../helpers/app.ts'
import { parseMetrics } from '../../helpers/metrics-text.ts'
import { assertTokenError, assertTokenSet, basicAuth, codeParams, grantOf, PREFIX, rawToken, TOKEN_FIELDS, type TokenSetBody } from '../../helpers/token-checks.ts'

type Client = Awaited<ReturnType<typeof addClient>>

/** POST to the standard endpoint, the form encoded as given. */
async function standardToken (app: FastifyInstance, form: Record<string, string>, authorization?: string): Promise<TokenAnswer> {
  return await rawToken(app, {
    method: 'POST',
    url: STANDARD_TOKEN_PATH,
    payload: new URLSearchParams(form).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization !== undefined && { authorization }) }
  })
}

/** The RFC form: plain JSON (no prefix), never cached. */
function assertStandardHeaders (t: Test, answer: TokenAnswer): void {
  t.notOk(answer.raw.startsWith(PREFIX), 'no &&&START&&& prefix')
  t.equal(answer.headers['content-type'], 'application/json; charset=utf-8', 'content-type')
  t.equal(answer.headers['cache-control'], 'no-store', 'cache-control')
  t.equal(answer.headers.pragma, 'no-cache', 'pragma')
}

/** A 200 with the token set's eight fields, the MAC type kept. */
function assertStandardTokenSet (t: Test, answer: TokenAnswer, scope = '1 3'): TokenSetBody {
  t.equal(answer.status, 200, `status 200 (${answer.raw.slice(0, 160)})`)
  assertStandardHeaders(t, answer)
  t.strictSame(Object.keys(answer.body), TOKEN_FIELDS, 'the token set\'s eight fields')
  t.match(answer.body, { token_type: 'mac', mac_algorithm: 'HmacSha1', expires_in: 7_776_000, scope })
  return answer.body as unknown as TokenSetBody
}

/** A §5.2 error: `{"error":"<code>","error_description":".."}` with the status. */
function assertStandardError (t: Test, answer: TokenAnswer, error: string, status = 400, description?: string): void {
  t.equal(answer.status, status, `status ${status} for ${error} (${answer.raw})`)
  assertStandardHeaders(t, answer)
  t.strictSame(Object.keys(answer.body), ['error', 'error_description'], 'exactly error and error_description')
  t.equal(answer.body.error, error, error)
  if (description !== undefined) t.equal(answer.body.error_description, description)
}

/** client_secret_post parameters of a code exchange (RFC 6749 §4.1.3). */
function codeForm (client: Client, code: string, extra: Record<string, string> = {}): Record<string, string> {
  return { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, client_id: client.clientId, client_secret: client.clientSecret, ...extra }
}

async function setup (t: Test, kind: 'memory' | 'redis' = 'memory') {
  const { app, store, redis } = await buildTestApp(t, { store: kind })
  const client = await addClient(store)
  const liveAccess = async (body: TokenSetBody): Promise<boolean> =>
    await store.getAccessToken(hashSecret(body.access_token), grantOf(app, body.access_token)) !== undefined
  return { app, store, client, liveAccess, redis }
}

for (const kind of ['memory', 'redis'] as const) {
  t.test(`${kind}: authorization_code by client_secret_post, then refresh_token without redirect_uri (RFC 6749 §6)`, async (t) => {
    const { app, client, liveAccess } = await setup(t, kind)
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    const issued = assertStandardTokenSet(t, await standardToken(app, codeForm(client, code)))
    t.ok(await liveAccess(issued), 'the access token is stored')

    const refreshed = assertStandardTokenSet(t, await standardToken(app, {
      grant_type: 'refresh_token', refresh_token: issued.refresh_token, client_id: client.clientId, client_secret: client.clientSecret
    }))
    t.not(refreshed.access_token, issued.access_token, 'a new access token')
    t.equal(refreshed.openId, issued.openId, 'the same openId')
    t.notOk(await liveAccess(issued), 'the old access token is revoked by the rotation')

    const narrowed = assertStandardTokenSet(t, await standardToken(app, {
      grant_type: 'refresh_token', refresh_token: refreshed.refresh_token, scope: '1', redirect_uri: 'https://ignored.example/', client_id: client.clientId, client_secret: client.clientSecret
    }), '1')
    t.ok(await liveAccess(narrowed), 'a narrowed scope; a redirect_uri a refresh does not define is ignored')

    // Reuse detection as on /oauth2/token: the spent token revokes the grant.
    const replay = await standardToken(app, { grant_type: 'refresh_token', refresh_token: refreshed.refresh_token }, basicAuth(client.clientId, client.clientSecret))
    assertStandardError(t, replay, 'invalid_grant', 400, 'refresh token already used')
    t.notOk(await liveAccess(narrowed), 'the grant is revoked')
  })
}

t.test('authorization_code by client_secret_basic, no client_id in the body', async (t) => {
  const { app, client } = await setup(t)
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  const answer = await standardToken(app, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }, basicAuth(client.clientId, client.clientSecret))
  assertStandardTokenSet(t, answer)
  t.ok(answer.raw.startsWith('{"access_token":"'), 'plain JSON, the contract\'s field order')
})

t.test('PKCE S256: the verifier redeems; a missing or wrong one is invalid_grant and leaves the code unused', async (t) => {
  const { app, client } = await setup(t)
  const verifier = randomBytes(32).toString('base64url')
  const challenge = createHash('sha256').update(verifier).digest('base64url')
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3', code_challenge: challenge, code_challenge_method: 'S256' })
  assertStandardError(t, await standardToken(app, codeForm(client, code)), 'invalid_grant', 400, 'code_verifier is required')
  assertStandardError(t, await standardToken(app, codeForm(client, code, { code_verifier: 'x'.repeat(43) })), 'invalid_grant', 400, 'code_verifier does not match')
  assertStandardError(t, await standardToken(app, codeForm(client, code, { code_verifier: 'short' })), 'invalid_request', 400, 'code_verifier malformed')
  assertStandardTokenSet(t, await standardToken(app, codeForm(client, code, { code_verifier: verifier })))
})

t.test('a code redeemed once across both endpoints; a replay on the other revokes what the first issued', async (t) => {
  const { app, client, liveAccess } = await setup(t, 'redis')

  await t.test('standard first, then /oauth2/token', async (t) => {
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    const issued = assertStandardTokenSet(t, await standardToken(app, codeForm(client, code)))
    assertTokenError(t, await callToken(app, codeParams(client, code)), 96013, 400, 'code already used')
    t.notOk(await liveAccess(issued), 'the standard endpoint\'s tokens are revoked')
  })

  await t.test('/oauth2/token first, then standard', async (t) => {
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    const issued = assertTokenSet(t, await callToken(app, codeParams(client, code)))
    assertStandardError(t, await standardToken(app, codeForm(client, code)), 'invalid_grant', 400, 'code already used')
    t.notOk(await liveAccess(issued), 'the Xiaomi endpoint\'s tokens are revoked')
  })

  await t.test('racing: one success across both endpoints', async (t) => {
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    const answers = await Promise.all([
      standardToken(app, codeForm(client, code)), callToken(app, codeParams(client, code)),
      standardToken(app, codeForm(client, code)), callToken(app, codeParams(client, code))
    ])
    t.equal(answers.filter((answer) => answer.status === 200).length, 1, 'exactly one 200')
  })

  await t.test('a refresh token from one endpoint rotates on the other', async (t) => {
    const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
    const issued = assertTokenSet(t, await callToken(app, codeParams(client, code)))
    assertStandardTokenSet(t, await standardToken(app, { grant_type: 'refresh_token', refresh_token: issued.refresh_token }, basicAuth(client.clientId, client.clientSecret)))
  })
})

t.test('a public client (none): client_id and code_verifier redeem its code, client_id alone refreshes', async (t) => {
  const { app, store, client: confidential } = await setup(t)
  const spa = await addPublicClient(store)
  const verifier = randomBytes(32).toString('base64url')
  const challenge = createHash('sha256').update(verifier).digest('base64url')
  const { code } = await obtainCode(app, spa.clientId, { redirect_uri: SPA_REDIRECT_URI, scope: '1 3', code_challenge: challenge, code_challenge_method: 'S256' })
  const exchange = { grant_type: 'authorization_code', code, redirect_uri: SPA_REDIRECT_URI, client_id: spa.clientId }
  assertStandardError(t, await standardToken(app, exchange), 'invalid_grant', 400, 'code_verifier is required')
  const withSecret = await standardToken(app, { ...exchange, code_verifier: verifier, client_secret: 'guess' })
  assertStandardError(t, withSecret, 'invalid_client', 401, 'a public client has no secret: send client_id alone')
  t.equal(withSecret.headers['www-authenticate'], 'Basic realm="macgate"')
  const issued = assertStandardTokenSet(t, await standardToken(app, { ...exchange, code_verifier: verifier }))
  assertStandardTokenSet(t, await standardToken(app, { grant_type: 'refresh_token', refresh_token: issued.refresh_token, client_id: spa.clientId }))
  // A confidential client is never taken for a public one.
  const { code: other } = await obtainCode(app, confidential.clientId)
  assertStandardError(t, await standardToken(app, { grant_type: 'authorization_code', code: other, redirect_uri: REDIRECT_URI, client_id: confidential.clientId }), 'invalid_request', 400, 'client_secret is missing')
})

t.test('CORS as at /oauth2/token: public clients\' origins only, a success only for its own client\'s', async (t) => {
  const { app, store, client: confidential } = await setup(t)
  const spa = await addPublicClient(store)
  const preflight = async (origin: string) => await app.inject({ method: 'OPTIONS', url: STANDARD_TOKEN_PATH, headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } })
  const ok = await preflight(SPA_ORIGIN)
  t.equal(ok.statusCode, 204, 'a public client\'s origin: 204')
  t.match(ok.headers, { 'access-control-allow-origin': SPA_ORIGIN, 'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'content-type' })
  const confidentialOrigin = new URL(REDIRECT_URI).origin
  for (const origin of [confidentialOrigin, 'https://stranger.example']) {
    const refused = await preflight(origin)
    t.equal(refused.statusCode, 405, `${origin}: 405`)
    t.equal(refused.headers['access-control-allow-origin'], undefined, `${origin}: no CORS`)
  }

  const verifier = randomBytes(32).toString('base64url')
  const { code } = await obtainCode(app, spa.clientId, { redirect_uri: SPA_REDIRECT_URI, code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' })
  const exchange = { grant_type: 'authorization_code', code, redirect_uri: SPA_REDIRECT_URI, client_id: spa.clientId, code_verifier: verifier }
  const post = async (form: Record<string, string>, origin: string) => await rawToken(app, {
    method: 'POST', url: STANDARD_TOKEN_PATH, payload: new URLSearchParams(form).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', origin }
  })
  const refusal = await post({ ...exchange, code: 'nope' }, SPA_ORIGIN)
  t.equal(refusal.status, 400)
  t.equal(refusal.headers['access-control-allow-origin'], SPA_ORIGIN, 'a refusal is readable, so the app reads its error')
  const issued = await post(exchange, SPA_ORIGIN)
  assertStandardTokenSet(t, issued, '1 3 4 6')
  t.equal(issued.headers['access-control-allow-origin'], SPA_ORIGIN, 'its own page reads its tokens')
  t.match(issued.headers.vary, /Origin/)
  const { code: confidentialCode } = await obtainCode(app, confidential.clientId)
  const fromConfidential = await post(codeForm(confidential, confidentialCode), confidentialOrigin)
  t.equal(fromConfidential.status, 200)
  t.equal(fromConfidential.headers['access-control-allow-origin'], undefined, 'never for a confidential client')
})

t.test('RFC 6749 §5.2 errors', async (t) => {
  const { app, store, client } = await setup(t)
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  const other = await addClient(store)
  const basic = basicAuth(client.clientId, client.clientSecret)

  assertStandardError(t, await standardToken(app, {}, basic), 'invalid_request', 400, 'grant_type is missing')
  assertStandardError(t, await standardToken(app, { grant_type: 'password', username: 'u', password: 'p' }, basic), 'unsupported_grant_type', 400)
  assertStandardError(t, await standardToken(app, { grant_type: 'client_credentials' }, basic), 'unsupported_grant_type', 400)
  assertStandardError(t, await standardToken(app, { grant_type: 'authorization_code', redirect_uri: REDIRECT_URI }, basic), 'invalid_request', 400, 'code is missing')
  assertStandardError(t, await standardToken(app, { grant_type: 'authorization_code', code }, basic), 'invalid_request', 400, 'redirect_uri is missing')
  assertStandardError(t, await standardToken(app, { grant_type: 'refresh_token' }, basic), 'invalid_request', 400, 'refresh_token is missing')
  assertStandardError(t, await standardToken(app, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, client_secret: client.clientSecret }, basic), 'invalid_request', 400, 'client authenticated both by Basic and by client_secret')
  const repeated = await rawToken(app, {
    method: 'POST', url: STANDARD_TOKEN_PATH, payload: 'grant_type=authorization_code&grant_type=refresh_token', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }
  })
  assertStandardError(t, repeated, 'invalid_request', 400, 'grant_type is repeated')

  // Client authentication: 401 invalid_client, with the Basic challenge whichever way it failed.
  for (const [label, answer] of [
    ['wrong secret by post', await standardToken(app, codeForm(client, code, { client_secret: 'wrong' }))],
    ['unknown client', await standardToken(app, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }, basicAuth('1000000000000000', 'secret'))]
  ] as const) {
    assertStandardError(t, answer, 'invalid_client', 401)
    t.equal(answer.headers['www-authenticate'], 'Basic realm="macgate"', `${label}: WWW-Authenticate`)
  }
  const wrongBasic = await standardToken(app, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }, basicAuth(client.clientId, 'wrong'))
  assertStandardError(t, wrongBasic, 'invalid_client', 401, 'client authentication failed')
  t.equal(wrongBasic.headers['www-authenticate'], 'Basic realm="macgate"', 'wrong secret by Basic: WWW-Authenticate')
  assertStandardError(t, await standardToken(app, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }), 'invalid_request', 400, 'client_id is missing')

  // The grant: another client's code, another redirect URI, an unknown code, a widened scope.
  assertStandardError(t, await standardToken(app, codeForm(other, code)), 'invalid_grant', 400, 'code was issued to another client')
  assertStandardError(t, await standardToken(app, codeForm(client, code, { redirect_uri: 'https://elsewhere.example/cb' })), 'invalid_grant', 400, 'redirect_uri missing or not matching')
  assertStandardError(t, await standardToken(app, codeForm(client, 'not-a-code')), 'invalid_grant', 400, 'code invalid or expired')
  const issued = assertStandardTokenSet(t, await standardToken(app, codeForm(client, code)))
  assertStandardError(t, await standardToken(app, { grant_type: 'refresh_token', refresh_token: issued.refresh_token, scope: '1 4' }, basic), 'invalid_scope', 400, 'scope 4 was not granted')
  assertStandardError(t, await standardToken(app, { grant_type: 'refresh_token', refresh_token: issued.refresh_token }, basicAuth(other.clientId, other.clientSecret)), 'invalid_grant', 400, 'refresh token was issued to another client')

  // A client registered for the implicit grant only may not redeem a code (its registration changed since).
  const { code: second } = await obtainCode(app, client.clientId, { scope: '1' })
  await store.saveClient({ ...client.client, responseTypes: ['token'], grantTypes: ['implicit'] })
  assertStandardError(t, await standardToken(app, codeForm(client, second)), 'unauthorized_client', 400)

  // Counted with /oauth2/token's requests, by grant type (never the client's text) and result.
  const metrics = parseMetrics(await app.macgate.metrics.registry.metrics())
  const count = (grantType: string, result: string): number | undefined => metrics.value('macgate_token_requests_total', { grant_type: grantType, result })
  t.equal(count('none', 'invalidRequest'), 2, 'no grant_type, a repeated one')
  t.equal(count('other', 'unsupportedGrantType'), 2, 'password and client_credentials, as "other"')
  t.equal(count('authorization_code', 'issued'), 1)
  t.equal(count('authorization_code', 'invalidClient'), 2)
})

t.test('POST with a form only: other methods 405, other media types 415, all in the RFC form', async (t) => {
  const { app } = await setup(t)
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const) {
    const answer = await rawToken(app, { method, url: `${STANDARD_TOKEN_PATH}?grant_type=authorization_code` })
    assertStandardError(t, answer, 'invalid_request', 405, 'use POST with a form body')
    t.equal(answer.headers.allow, 'POST', `${method}: Allow`)
  }
  const head = await app.inject({ method: 'HEAD', url: STANDARD_TOKEN_PATH })
  t.equal(head.statusCode, 405, 'HEAD: 405')
  const json = await rawToken(app, { method: 'POST', url: STANDARD_TOKEN_PATH, payload: '{"grant_type":"refresh_token"}', headers: { 'content-type': 'application/json' } })
  assertStandardError(t, json, 'invalid_request', 415)
  const noBody = await rawToken(app, { method: 'POST', url: `${STANDARD_TOKEN_PATH}?grant_type=refresh_token` })
  assertStandardError(t, noBody, 'invalid_request', 400, 'grant_type is missing')
  t.pass('the query is not read: a secret never rides in a URL')
})

t.test('the client authentication throttle applies: 429 temporarily_unavailable with Retry-After', async (t) => {
  const { app, store } = await buildTestApp(t, { clientAuthRateLimit: { perClient: 2, perAddress: 100 } })
  const client = await addClient(store)
  const wrong = basicAuth(client.clientId, 'wrong')
  for (let i = 0; i < 2; i++) assertStandardError(t, await standardToken(app, { grant_type: 'refresh_token', refresh_token: 'x' }, wrong), 'invalid_client', 401)
  const blocked = await standardToken(app, { grant_type: 'refresh_token', refresh_token: 'x' }, basicAuth(client.clientId, client.clientSecret))
  assertStandardError(t, blocked, 'temporarily_unavailable', 429)
  t.match(String(blocked.headers['retry-after']), /^\d+$/, 'Retry-After')
})

const shared = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''
t.test('a store outage: 503 temporarily_unavailable, never a 400, 401 or 500', { skip: shared ? 'stops Redis: needs a redis-server of its own' : false }, async (t) => {
  const { app, client, redis } = await setup(t, 'redis')
  const { code } = await obtainCode(app, client.clientId)
  await redis!.stop()
  assertStandardError(t, await standardToken(app, codeForm(client, code)), 'temporarily_unavailable', 503, 'service temporarily unavailable')
})
