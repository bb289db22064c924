// The gateway's proxy (contract section 6, last point): what reaches the upstream, what never does,
// routing answers, and connection reuse to a real upstream.
import { request as httpRequest } from 'node:http'
import { once } from 'node:events'
import t from 'tap'
import { buildTestGateway, echoRoutes, hmac, liveToken, nonceAt, openApiError, recordingUpstream, signedInject, signedString } from '../../helpers/gateway.ts'

const IDENTITY_HEADERS = ['x-macgate-client-id', 'x-macgate-open-id', 'x-macgate-scope', 'x-macgate-user-id']

t.test('the sample upstream sees the identity, never the token nor a spoofed identity', async (t) => {
  const { app } = await buildTestGateway(t, { config: { routes: echoRoutes } })
  const token = await liveToken(app)
  const response = await signedInject(app, {
    url: '/echo/some/path?b=2&a=1',
    token: token.accessToken,
    macKey: token.macKey,
    headers: { 'x-macgate-user-id': 'admin', 'X-Macgate-Open-Id': 'someone-else', 'x-macgate-anything': 'spoofed', 'x-other': 'kept' }
  })
  t.equal(response.statusCode, 200)
  const { data } = response.json() as { data: { method: string, url: string, headers: Record<string, string> } }
  t.equal(data.method, 'GET')
  t.equal(data.url, '/echo/some/path?b=2&a=1')
  t.equal(data.headers['x-macgate-open-id'], token.openId)
  t.equal(data.headers['x-macgate-client-id'], token.clientId)
  t.equal(data.headers['x-macgate-user-id'], token.userId)
  t.equal(data.headers['x-macgate-scope'], '1 3 4 6')
  t.same(Object.keys(data.headers).filter((name) => name.startsWith('x-macgate-')).sort(), IDENTITY_HEADERS, 'only the four identity headers')
  t.equal(data.headers.authorization, undefined, 'no Authorization upstream')
  t.equal(data.headers['x-other'], 'kept')
  t.notOk(JSON.stringify(data).includes(token.accessToken), 'the access token appears nowhere upstream')
  t.notOk(JSON.stringify(data).includes(token.macKey), 'nor the mac key')
})

t.test('a token in the query (as SDKs send it) does not go upstream; other pairs keep their encoding', async (t) => {
  const { app } = await buildTestGateway(t, { config: { routes: echoRoutes } })
  const token = await liveToken(app)
  const response = await signedInject(app, {
    url: `/echo/q?clientId=${token.clientId}&token=${encodeURIComponent(token.accessToken)}&s=a%20b`,
    token: token.accessToken,
    macKey: token.macKey
  })
  t.equal(response.statusCode, 200)
  const { data } = response.json() as { data: { url: string } }
  t.equal(data.url, `/echo/q?clientId=${token.clientId}&s=a%20b`)
})

t.test('a real upstream: bodies, early rejection, routing, keep-alive', async (t) => {
  const upstream = await recordingUpstream(t)
  const { app } = await buildTestGateway(t, { config: { upstream: upstream.url, routes: echoRoutes } })
  const token = await liveToken(app)

  t.test('a POST with a body is proxied', async (t) => {
    const before = upstream.requests.length
    const payload = JSON.stringify({ hello: 'world', n: [1, 2, 3] })
    const response = await signedInject(app, { method: 'POST', url: '/echo/items?x=1', token: token.accessToken, macKey: token.macKey, payload, headers: { 'content-type': 'application/json' } })
    t.equal(response.statusCode, 200)
    t.same(response.json(), { result: 'ok', description: 'success', data: { n: before + 1, bytes: payload.length }, code: 0 })
    const seen = upstream.requests.at(-1)!
    t.equal(seen.method, 'POST')
    t.equal(seen.url, '/echo/items?x=1')
    t.equal(seen.body, payload)
    t.equal(seen.headers['content-type'], 'application/json')
    t.equal(seen.headers['x-macgate-user-id'], token.userId)
    t.equal(seen.headers.authorization, undefined)
  })

  t.test('a refused POST of 1 MB never reaches the upstream', async (t) => {
    const before = upstream.requests.length
    const big = 'x'.repeat(1024 * 1024)
    const injected = await signedInject(app, { method: 'POST', url: '/echo/upload', token: token.accessToken, macKey: token.macKey, payload: big, headers: { 'content-type': 'text/plain' }, sign: { path: '/echo/elsewhere' } })
    t.equal(injected.statusCode, 401)
    t.same(injected.json(), openApiError(96012, 'mac does not match'))

    // Over a socket: headers announce 1 MB, 1 KiB is sent, and the 401 comes back anyway, so the
    // refusal happened in onRequest, before the body was read.
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    const nonce = nonceAt()
    const mac = hmac(token.macKey, signedString({ method: 'POST', url: '/echo/elsewhere', token: '', macKey: '', nonce }))
    const request = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/echo/upload',
      headers: { host: 'api.example.com', 'content-type': 'text/plain', 'content-length': String(big.length), authorization: `MAC access_token="${token.accessToken}", nonce="${nonce}", mac="${mac}"` }
    })
    request.on('error', () => {}) // the server may close the connection once it has answered
    request.write(big.slice(0, 1024))
    const timer = setTimeout(() => request.destroy(new Error('no answer before the body was sent')), 5000)
    const [response] = await once(request, 'response') as [import('node:http').IncomingMessage]
    clearTimeout(timer)
    let text = ''
    for await (const chunk of response) text += String(chunk)
    request.destroy()
    t.equal(response.statusCode, 401)
    t.equal(response.headers['www-authenticate'], 'MAC')
    t.same(JSON.parse(text), openApiError(96012, 'mac does not match'))
    t.equal(upstream.requests.length, before, 'the upstream saw neither request')
  })

  t.test('routes: unknown path 404, method not allowed 405', async (t) => {
    const before = upstream.requests.length
    const unknown = await signedInject(app, { url: '/not/configured', token: token.accessToken, macKey: token.macKey })
    t.equal(unknown.statusCode, 404)
    t.same(unknown.json(), { result: 'error', description: 'no such API', code: 404 })
    const unsigned = await app.inject({ url: '/not/configured', headers: { host: 'api.example.com' } })
    t.equal(unsigned.statusCode, 404, 'unknown paths are 404 without a signature too')

    const post = await signedInject(app, { method: 'POST', url: '/user/profile', token: token.accessToken, macKey: token.macKey, payload: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    t.equal(post.statusCode, 405)
    t.equal(post.headers.allow, 'GET')
    t.same(post.json(), openApiError(96002, 'use GET'))

    // Every method reaches the route check: the open API's 405 and 404, not Fastify's own 404.
    const put = await signedInject(app, { method: 'PUT', url: '/user/profile', token: token.accessToken, macKey: token.macKey })
    t.equal(put.statusCode, 405, 'PUT on a GET-only route is 405')
    t.same(put.json(), openApiError(96002, 'use GET'), 'in the open API shape')
    const del = await app.inject({ method: 'DELETE', url: '/not/configured', headers: { host: 'api.example.com' } })
    t.same(del.json(), { result: 'error', description: 'no such API', code: 404 }, 'DELETE on an unknown path answers the open API 404')
    t.equal(upstream.requests.length, before, 'none of these reached the upstream')
  })

  t.test('keep-alive: 20 sequential requests reuse the upstream connection', async (t) => {
    const before = upstream.requests.length
    for (let i = 0; i < 20; i++) {
      const response = await signedInject(app, { url: `/echo/k?i=${i}`, token: token.accessToken, macKey: token.macKey })
      t.equal(response.statusCode, 200, `request ${i}`)
    }
    const seen = upstream.requests.slice(before)
    t.same(seen.map((request) => request.url), Array.from({ length: 20 }, (_, i) => `/echo/k?i=${i}`))
    const sockets = new Set(seen.map((request) => request.socket))
    t.ok(sockets.size <= 2, `at most 2 upstream sockets for 20 requests (saw ${sockets.size})`)
  })
})
