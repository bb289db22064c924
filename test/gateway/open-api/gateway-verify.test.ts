// MAC verification at the gateway, through HTTP (contract section 6): header spellings, every
// rejection with its status and code, what the signed string covers, and macAuth on a user's route.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'
import t from 'tap'
import macgate from '../../../plugin/index.ts'
import { signRequest } from '../../../plugin/client/index.ts'
import { newGrantId, mintToken } from '../../../plugin/access/credentials.ts'
import { MemoryStore } from '../../../plugin/store/memory/memory-store.ts'
import { buildGateway } from '../../../gateway/index.ts'
import { buildTestApp, callToken, REDIRECT_URI } from '../../helpers/app.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { API_HOST, awayFromMinuteEdge, buildTestGateway, echoRoutes, hmac, liveToken, nonceAt, openApiError, signedInject, signedString } from '../../helpers/gateway.ts'

interface HeaderSample { header: string, nonce: string, sent_by?: string, why?: string }
const fixture = JSON.parse(readFileSync(new URL('../../fixtures/mac.json', import.meta.url), 'utf8')) as { headers: { valid: HeaderSample[], invalid: HeaderSample[] } }

const DENIED = (description: string) => openApiError(96012, description)
const BAD_TOKEN = openApiError(96008, 'access token invalid or expired')

t.test('every header spelling of the SDKs is accepted', async (t) => {
  const { app } = await buildTestGateway(t)
  const token = await liveToken(app)
  // How each fixture spells the mac; the real mac is chosen to hold both `+` and `/`.
  const macSpellings: Array<[string, (mac: string) => string]> = [
    ['abc%2B%2Fdef%3D', encodeURIComponent],
    ['abc%2B/def%3D', (mac) => encodeURIComponent(mac).replaceAll('%2F', '/')],
    ['abc+/def=', (mac) => mac]
  ]
  let random = 1000
  for (const sample of fixture.headers.valid) {
    await awayFromMinuteEdge()
    let nonce: string
    let mac: string
    do {
      nonce = nonceAt(0, `${sample.nonce.startsWith('-') ? '-' : ''}${++random}`)
      mac = hmac(token.macKey, signedString({ url: '/user/profile', token: '', macKey: '', nonce }))
    } while (!mac.includes('+') || !mac.includes('/'))
    const spelling = macSpellings.find(([text]) => sample.header.includes(`"${text}"`))!
    const nonceText = sample.header.includes(`"${sample.nonce}"`) ? nonce : encodeURIComponent(nonce)
    const header = sample.header
      .replace('"tok123"', `"${token.accessToken}"`)
      .replace(/"-?42(:|%3A)29000000"/, `"${nonceText}"`)
      .replace(`"${spelling[0]}"`, `"${spelling[1](mac)}"`)
    t.notOk(/tok123|29000000|abc/.test(header), `${sample.sent_by}: every value replaced`)
    const response = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey, nonce, authorization: () => header })
    t.equal(response.statusCode, 200, `${sample.sent_by}: ${header}`)
    t.equal(response.json().result, 'ok')
  }
})

t.test('malformed, missing and over-long headers: 401 96002 with WWW-Authenticate: MAC', async (t) => {
  const { app } = await buildTestGateway(t)
  const token = await liveToken(app)
  const reasons: Record<string, string> = {
    'mac missing': 'missing mac',
    'nonce repeated': 'nonce given more than once',
    'not the MAC scheme': 'scheme is not MAC',
    'unquoted value': 'access_token value must be in double quotes',
    'nonce without colon': 'nonce must be R:M with R 1-64 characters without : or whitespace',
    'minutes not an integer': 'nonce minutes must be a non-negative integer of at most 12 digits',
    'empty access_token': 'access_token is empty',
    'bad percent-encoding': 'bad percent-encoding in access_token'
  }
  t.equal(fixture.headers.invalid.length, Object.keys(reasons).length)
  for (const sample of fixture.headers.invalid) {
    // The fixture's token, and the same header with a live token: the form alone is refused.
    for (const header of [sample.header, sample.header.replace('tok123', token.accessToken)]) {
      const response = await app.inject({ url: '/user/profile', headers: { host: API_HOST, authorization: header } })
      t.equal(response.statusCode, 401, sample.why ?? '')
      t.equal(response.headers['www-authenticate'], 'MAC')
      t.same(response.json(), openApiError(96002, `invalid MAC Authorization header: ${reasons[sample.why!]}`), sample.why ?? '')
    }
  }
  const missing = await app.inject({ url: '/user/profile', headers: { host: API_HOST } })
  t.equal(missing.statusCode, 401)
  t.equal(missing.headers['www-authenticate'], 'MAC')
  t.same(missing.json(), openApiError(96002, 'MAC Authorization header is missing'))
  // A correctly signed request made long by padding: refused on length before anything else.
  const long = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey, authorization: (parts) => `MAC access_token="${parts.token}", nonce="${parts.nonce}", mac="${parts.mac}"${' '.repeat(4097)}` })
  t.equal(long.statusCode, 401)
  t.equal(long.headers['www-authenticate'], 'MAC')
  t.same(long.json(), openApiError(96002, 'invalid MAC Authorization header: longer than 4096 characters'))
})

t.test('rejections, each with its status and code', async (t) => {
  const { app } = await buildTestGateway(t)
  const token = await liveToken(app)
  const call = async (extra: Partial<Parameters<typeof signedInject>[1]> = {}) =>
    await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey, ...extra })
  const refused = (response: Awaited<ReturnType<typeof call>>, status: number, body: object, name: string) => {
    t.equal(response.statusCode, status, name)
    t.equal(response.headers['www-authenticate'], status === 401 ? 'MAC' : undefined, `${name}: WWW-Authenticate`)
    t.same(response.json(), body, name)
  }

  const flipped = await call({ authorization: ({ token: tk, nonce, mac }) => `MAC access_token="${tk}", nonce="${nonce}", mac="${(mac[0] === 'A' ? 'B' : 'A') + mac.slice(1)}"` })
  refused(flipped, 401, DENIED('mac does not match'), 'one character of the mac changed')

  await awayFromMinuteEdge()
  refused(await call({ nonce: nonceAt(-6) }), 401, DENIED('nonce is stale'), 'nonce 6 minutes old')
  refused(await call({ nonce: nonceAt(6) }), 401, DENIED('nonce is from the future'), 'nonce 6 minutes ahead')
  t.equal((await call({ nonce: nonceAt(-5) })).statusCode, 200, 'nonce 5 minutes old is fresh')
  t.equal((await call({ nonce: nonceAt(5) })).statusCode, 200, 'nonce 5 minutes ahead is fresh')

  const nonce = nonceAt()
  t.equal((await call({ nonce })).statusCode, 200)
  refused(await call({ nonce }), 401, DENIED('nonce already used'), 'the same nonce again')

  const unknown = mintToken(app.macgate.secret, newGrantId())
  refused(await call({ token: unknown }), 401, BAD_TOKEN, 'a well-formed token never issued')
  refused(await call({ token: 'garbage' }), 401, BAD_TOKEN, 'garbage token')

  const other = await liveToken(app)
  refused(await call({ url: `/user/profile?token=${other.accessToken}` }), 401, DENIED('token parameter does not match the access token'), 'token parameter of another token')
  t.equal((await call({ url: `/user/profile?token=${token.accessToken}` })).statusCode, 200, 'token parameter equal to the header token')
  refused(await call({ url: `/user/profile?clientId=${other.clientId}` }), 401, DENIED('clientId parameter does not match the token'), 'clientId of another client')
  t.equal((await call({ url: `/user/profile?clientId=${token.clientId}&token=${token.accessToken}` })).statusCode, 200, 'clientId and token parameters that match')

  const openIdOnly = await liveToken(app, { scope: '3' })
  t.equal(openIdOnly.scope, '3')
  refused(await signedInject(app, { url: '/user/profile', token: openIdOnly.accessToken, macKey: openIdOnly.macKey }), 403, DENIED('scope 1 not granted'), 'scope 3 token on a scope 1 route')
  const openid = await signedInject(app, { url: '/user/openidV2', token: openIdOnly.accessToken, macKey: openIdOnly.macKey })
  t.same(openid.json(), { result: 'ok', description: 'success', data: { openid: openIdOnly.openId }, code: 0 })

  // /user/phoneAndEmail takes 4 or 6; a token with 6 alone sees the email and no phone.
  const emailOnly = await liveToken(app, { scope: '6' })
  const contact = await signedInject(app, { url: '/user/phoneAndEmail', token: emailOnly.accessToken, macKey: emailOnly.macKey })
  t.equal(contact.statusCode, 200)
  const email = `user-${createHash('sha256').update(emailOnly.userId).digest('hex').slice(0, 8)}@example.invalid`
  t.same(contact.json(), { result: 'ok', description: 'success', data: { email }, code: 0 })
  refused(await signedInject(app, { url: '/user/phoneAndEmail', token: openIdOnly.accessToken, macKey: openIdOnly.macKey }), 403, DENIED('scope 4 or 6 not granted'), 'neither 4 nor 6')
})

t.test('an expired token: 96008 even after it was cached', async (t) => {
  // The plugin's clock, stepped past the token's second instead of waiting it out.
  const clock = steppedClock()
  const { app } = await buildTestApp(t, { accessTokenTtl: 1, clock: clock.now })
  const token = await liveToken(app)
  t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })).statusCode, 200)
  clock.step(1200)
  const response = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })
  t.equal(response.statusCode, 401)
  t.same(response.json(), BAD_TOKEN)
})

t.test('a verified request reads the plugin\'s clock once, first (Hawk): on a token cache miss and on a hit', async (t) => {
  // The plugin's reads only: the store keeps its own clock here.
  let reads = 0
  const store = new MemoryStore()
  const app = await buildGateway({ store, clock: () => { reads++; return Date.now() } })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  const token = await liveToken(app)
  for (const which of ['miss', 'hit']) {
    reads = 0
    t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })).statusCode, 200)
    t.equal(reads, 1, `one clock reading on a cache ${which}`)
  }
})

t.test('a token revoked by a replayed code: 96008 even after it was cached', async (t) => {
  const { app } = await buildTestGateway(t)
  const token = await liveToken(app)
  t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })).statusCode, 200)
  const replay = await callToken(app, { client_id: token.clientId, client_secret: token.clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code: token.code })
  t.equal(replay.status, 400)
  t.equal(replay.body.error, 96013)
  const response = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })
  t.equal(response.statusCode, 401)
  t.same(response.json(), BAD_TOKEN)
})

t.test('the query, host and path as signed', async (t) => {
  const { app } = await buildTestGateway(t, { config: { routes: echoRoutes } })
  const token = await liveToken(app)
  const url = '/user/profile?b=2&a=1&e=&s=x+y%2Bz'
  const status = async (sign: { host?: string, path?: string, query?: string }, request: { url?: string, host?: string } = {}) =>
    (await signedInject(app, { url, token: token.accessToken, macKey: token.macKey, sign, ...request })).statusCode
  t.equal(await status({ query: 'a=1&b=2&e=&s=x y+z' }), 200, 'primary: decoded, sorted')
  t.equal(await status({ query: 'a=1&b=2&e=&s=x+y%2Bz' }), 200, 'Java: form-encoded values')
  t.equal(await status({ query: 'a=1&b=2&s=x y+z' }), 200, 'documentation: empty values left out')
  for (const query of ['b=2&a=1&e=&s=x+y%2Bz', 'a=1&b=2&e=&s=x y z', '']) {
    const response = await signedInject(app, { url, token: token.accessToken, macKey: token.macKey, sign: { query } })
    t.equal(response.statusCode, 401, `query signed as ${JSON.stringify(query)}`)
    t.same(response.json(), DENIED('mac does not match'))
  }

  // The string carries the host lower-cased and without its port, whatever the Host header says.
  t.equal(await status({ query: '', host: 'api.example.com' }, { url: '/user/profile', host: 'api.example.com:8443' }), 200)
  t.equal(await status({ query: '', host: 'api.example.com' }, { url: '/user/profile', host: 'API.Example.com:8443' }), 200)
  t.equal(await status({ query: '', host: 'api.example.com:8443' }, { url: '/user/profile', host: 'api.example.com:8443' }), 401, 'port kept in the string')
  t.equal(await status({ query: '', host: 'API.Example.com' }, { url: '/user/profile', host: 'API.Example.com' }), 401, 'case kept in the string')
  t.equal(await status({ query: '', host: 'evil.example.com' }, { url: '/user/profile' }), 401, 'signed for another host')
  const client = signRequest({ method: 'GET', url: 'https://API.Example.com:8443/user/profile?b=2&a=1&e=&s=x+y%2Bz', accessToken: token.accessToken, macKey: token.macKey })
  const viaClient = await app.inject({ url, headers: { host: 'api.example.com:8443', authorization: client } })
  t.equal(viaClient.statusCode, 200, 'the client library, signing for API.Example.com:8443')

  // The path is the one sent: `/user/profile/` is no configured route (404 before any MAC check);
  // under a prefix route a different spelling of the path fails the mac.
  const slash = await signedInject(app, { url: '/user/profile/', token: token.accessToken, macKey: token.macKey, sign: { path: '/user/profile' } })
  t.equal(slash.statusCode, 404)
  t.same(slash.json(), { result: 'error', description: 'no such API', code: 404 })
  t.equal(await status({ path: '/echo/x', query: '' }, { url: '/echo/x/' }), 401, '/echo/x/ signed as /echo/x')
  t.equal(await status({ path: '/echo/a b', query: '' }, { url: '/echo/a%20b' }), 401, '/echo/a%20b signed decoded')
  t.equal(await status({ path: '/echo/a%20b', query: '' }, { url: '/echo/a%20b' }), 200, '/echo/a%20b signed as sent')
})

t.test('macAuth on a route of the user\'s own', async (t) => {
  const store = new MemoryStore()
  const app = Fastify()
  t.teardown(async () => { await app.close(); await store.close() })
  await app.register(macgate, { store })
  app.get('/mine', { onRequest: app.macAuth({ scopes: ['1'] }) }, async (request) => request.macIdentity)
  const token = await liveToken(app)
  const mine = await signedInject(app, { url: '/mine', token: token.accessToken, macKey: token.macKey })
  t.equal(mine.statusCode, 200)
  t.same(mine.json(), { openId: token.openId, clientId: token.clientId, userId: token.userId, scope: ['1', '3', '4', '6'] })

  const noProfile = await liveToken(app, { scope: '3 6' })
  const forbidden = await signedInject(app, { url: '/mine', token: noProfile.accessToken, macKey: noProfile.macKey })
  t.equal(forbidden.statusCode, 403)
  t.equal(forbidden.headers['www-authenticate'], undefined)
  t.same(forbidden.json(), DENIED('scope 1 not granted'))

  const badMac = await signedInject(app, { url: '/mine', token: token.accessToken, macKey: token.macKey, sign: { path: '/other' } })
  t.equal(badMac.statusCode, 401)
  t.equal(badMac.headers['www-authenticate'], 'MAC')
  t.same(badMac.json(), DENIED('mac does not match'))
})

t.test('the store unreachable: 503 96000, never 200 or 500', { skip: process.env.REDIS_URL ? 'needs a Redis of its own to stop' : false }, async (t) => {
  const { app, redis } = await buildTestGateway(t, { store: 'redis', config: { tokenCache: { max: 0, maxAgeMs: 300_000, negativeTtlMs: 10_000 } } })
  const token = await liveToken(app)
  t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })).statusCode, 200)
  await redis!.stop()
  for (let i = 0; i < 3; i++) {
    const response = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })
    t.equal(response.statusCode, 503, `attempt ${i + 1}`)
    t.equal(response.headers['www-authenticate'], undefined)
    t.same(response.json(), openApiError(96000, 'service temporarily unavailable'))
  }
  // Started again, empty (this also keeps the helper's teardown from waiting on a killed child:
  // its stop() checks exitCode, which stays null after SIGKILL). The gateway reconnects by itself
  // and the token, gone with the data, is now unknown.
  await redis!.start()
  let after = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })
  for (let i = 0; i < 50 && after.statusCode === 503; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    after = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })
  }
  t.equal(after.statusCode, 401)
  t.same(after.json(), BAD_TOKEN)
})
