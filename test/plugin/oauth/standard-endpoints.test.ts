// The RFC endpoints (contract §10) as a generic OAuth client and resource server use them: discovery
// from the metadata document, then revocation (RFC 7009) and introspection (RFC 7662) with standard
// parameters and plain JSON, nothing Xiaomi-specific.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { mintToken, newGrantId } from '../../../plugin/access/credentials.ts'
import { addClient, buildTestApp } from '../../helpers/app.ts'
import { issueTokens, liveGateway, pollUntilRefused, signedGet } from '../../helpers/live.ts'
import { startRedis } from '../../helpers/redis.ts'

interface Metadata { issuer: string, revocation_endpoint: string, introspection_endpoint: string, token_endpoint: string, [name: string]: unknown }

const redis = await startRedis(t)
const secret = randomBytes(32).toString('base64url')
const a = await liveGateway(t, redis, secret)
const b = await liveGateway(t, redis, secret)

const basic = (id: string, password: string): string => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(password)}`).toString('base64')}`

async function post (url: string, form: Record<string, string>, authorization?: string): Promise<{ status: number, body: Record<string, unknown>, headers: Headers }> {
  const response = await fetch(url, {
    method: 'POST',
    body: new URLSearchParams(form),
    headers: { ...(authorization !== undefined && { authorization }) }
  })
  return { status: response.status, body: await response.json() as Record<string, unknown>, headers: response.headers }
}

async function discover (origin: string): Promise<Metadata> {
  const response = await fetch(`${origin}/.well-known/oauth-authorization-server`)
  t.equal(response.headers.get('content-type'), 'application/json; charset=utf-8')
  return await response.json() as Metadata
}

t.test('RFC 8414 metadata: every field a generic client needs', async (t) => {
  const metadata = await discover(a.origin)
  t.strictSame(metadata, {
    issuer: a.origin,
    authorization_endpoint: `${a.origin}/oauth2/authorize`,
    // The RFC 6749 token endpoint (the Xiaomi /oauth2/token answers with a prefix no RFC client reads).
    token_endpoint: `${a.origin}/oauth2/rfc/token`,
    revocation_endpoint: `${a.origin}/oauth2/revoke`,
    introspection_endpoint: `${a.origin}/oauth2/introspect`,
    response_types_supported: ['code', 'token'],
    grant_types_supported: ['authorization_code', 'implicit', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    scopes_supported: a.app.macgate.registry.ids()
  })
  t.ok((metadata.scopes_supported as string[]).includes('1'))
  const { app } = await buildTestApp(t, { issuer: 'https://id.example.com/' })
  const configured = JSON.parse((await app.inject('/.well-known/oauth-authorization-server')).body) as Metadata
  t.equal(configured.issuer, 'https://id.example.com', 'a configured issuer wins over the request')
  t.equal(configured.token_endpoint, 'https://id.example.com/oauth2/rfc/token')
})

t.test('introspection: a client sees its own live access token, nothing else', async (t) => {
  const { introspection_endpoint: introspect } = await discover(a.origin)
  const { clientId, clientSecret } = await addClient(a.store)
  const { tokens } = await issueTokens(a, clientId, clientSecret)
  const own = await post(introspect, { token: tokens.access_token }, basic(clientId, clientSecret))
  t.equal(own.status, 200)
  t.equal(own.headers.get('cache-control'), 'no-store')
  t.match(own.body, { active: true, scope: tokens.scope, client_id: clientId, token_type: 'mac', sub: tokens.openId })
  t.ok(Math.abs((own.body.exp as number) - (Date.now() / 1000 + tokens.expires_in)) < 5, 'exp: the token\'s expiry, in seconds')
  const byPost = await post(introspect, { token: tokens.access_token, client_id: clientId, client_secret: clientSecret })
  t.equal(byPost.body.active, true, 'client_secret_post works too')

  const other = await addClient(a.store)
  t.strictSame((await post(introspect, { token: tokens.access_token }, basic(other.clientId, other.clientSecret))).body, { active: false }, 'another client sees nothing')
  const resourceServer = await addClient(a.store, { resourceServer: true })
  t.equal((await post(introspect, { token: tokens.access_token }, basic(resourceServer.clientId, resourceServer.clientSecret))).body.active, true, 'a registered resource server sees any token')
  t.strictSame((await post(introspect, { token: tokens.refresh_token! }, basic(clientId, clientSecret))).body, { active: false }, 'a refresh token is not an access token')
  t.strictSame((await post(introspect, { token: mintToken(secret, newGrantId()) }, basic(clientId, clientSecret))).body, { active: false }, 'an unknown token')
  t.strictSame((await post(introspect, { token: 'forged' }, basic(clientId, clientSecret))).body, { active: false }, 'a forged token')
})

t.test('errors in RFC 6749 form', async (t) => {
  const { revocation_endpoint: revoke, introspection_endpoint: introspect } = await discover(a.origin)
  const { clientId, clientSecret } = await addClient(a.store)
  for (const url of [revoke, introspect]) {
    const wrong = await post(url, { token: 'x' }, basic(clientId, 'wrong'))
    t.equal(wrong.status, 401)
    t.equal(wrong.headers.get('www-authenticate'), 'Basic realm="macgate"')
    t.strictSame(wrong.body, { error: 'invalid_client', error_description: 'client authentication failed' })
    const missing = await post(url, {}, basic(clientId, clientSecret))
    t.equal(missing.status, 400)
    t.strictSame(missing.body, { error: 'invalid_request', error_description: 'token is missing' })
    for (const [credentials, label] of [['%zz:x', 'a bad percent-escape'], [clientId, 'no colon']]) {
      const malformed = await post(url, { token: 'x' }, `Basic ${Buffer.from(credentials!).toString('base64')}`)
      t.equal(malformed.status, 400, `Basic credentials with ${label}: 400`)
      t.strictSame(malformed.body, { error: 'invalid_request', error_description: 'malformed Basic credentials' })
    }
    const anonymous = await post(url, { token: 'x' })
    t.strictSame(anonymous.body, { error: 'invalid_request', error_description: 'client_id is missing' })
    const json = await fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })
    t.equal(json.status, 415, 'forms only')
    t.equal(((await json.json()) as { error: string }).error, 'invalid_request')
  }
})

t.test('revocation: 200 whatever the token; an access token revoked at A is refused by B within 100 ms', async (t) => {
  const { revocation_endpoint: revoke, introspection_endpoint: introspect } = await discover(a.origin)
  const { clientId, clientSecret } = await addClient(a.store)
  const auth = basic(clientId, clientSecret)
  const { tokens } = await issueTokens(a, clientId, clientSecret)
  t.equal((await signedGet(b.origin, '/user/profile', tokens)).status, 200, 'B warmed')

  const other = await addClient(a.store)
  t.strictSame(await post(revoke, { token: tokens.access_token }, basic(other.clientId, other.clientSecret)).then(({ status, body }) => ({ status, body })), { status: 200, body: {} }, 'another client gets 200...')
  t.equal((await signedGet(b.origin, '/user/profile', tokens)).status, 200, '...and the token is left alone')

  t.strictSame((await post(revoke, { token: tokens.access_token, token_type_hint: 'access_token' }, auth)).status, 200)
  // Measured from the revocation's answer: by then A's store has revoked and published (A's own
  // handling of the request is not the announcement's latency).
  const since = Date.now()
  const { last, elapsed } = await pollUntilRefused(b.origin, '/user/profile', tokens, since)
  t.equal(last.status, 401)
  t.ok(elapsed < 100, `B refused the revoked token ${elapsed} ms after the revocation answered`)
  t.strictSame((await post(introspect, { token: tokens.access_token }, auth)).body, { active: false })
  t.equal((await post(revoke, { token: tokens.access_token }, auth)).status, 200, 'revoking again is still 200')
  t.equal((await post(revoke, { token: 'never-issued' }, auth)).status, 200, 'an unknown token is 200')
})

t.test('revoking a refresh token revokes its whole grant, whatever the hint says', async (t) => {
  const { revocation_endpoint: revoke, introspection_endpoint: introspect } = await discover(a.origin)
  const { clientId, clientSecret } = await addClient(a.store)
  const auth = basic(clientId, clientSecret)
  const { tokens } = await issueTokens(a, clientId, clientSecret)
  t.equal((await post(revoke, { token: tokens.refresh_token!, token_type_hint: 'access_token' }, auth)).status, 200)
  t.strictSame((await post(introspect, { token: tokens.access_token }, auth)).body, { active: false }, 'the access token of the grant is gone too')
  t.equal((await signedGet(a.origin, '/user/profile', tokens)).status, 401)
})
