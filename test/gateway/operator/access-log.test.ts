// The gateway's logs at the default level: one structured line per request (method, path without
// query, status, latency, client, rejection reason), never the proxy client's own lines.
import t from 'tap'
import { loggedGateway } from '../../helpers/memory-log.ts'
import { liveToken, signedInject } from '../../helpers/gateway.ts'

t.test('one access line per request, with the reason for a refusal and no query', async (t) => {
  const { app, log } = await loggedGateway(t)
  const token = await liveToken(app)
  log.lines.length = 0

  const served = await signedInject(app, { url: '/user/profile?code=secret-in-query', token: token.accessToken, macKey: token.macKey })
  const refused = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: 'not-the-key' })
  const page = await app.inject({ url: '/oauth2/signin' })
  t.same([served.statusCode, refused.statusCode, page.statusCode], [200, 401, 200])

  t.equal(log.lines.length, 3, 'three requests, three lines')
  t.match(log.lines[0], { level: 30, msg: 'request', method: 'GET', path: '/user/profile', status: 200, client: token.clientId, ms: Number })
  t.notOk('reason' in log.lines[0]!, 'no reason on a served request')
  t.match(log.lines[1], { msg: 'request', status: 401, reason: 'mac does not match' })
  t.notOk('client' in log.lines[1]!, 'no client on a refused request')
  t.match(log.lines[2], { msg: 'request', path: '/oauth2/signin', status: 200 })
  const all = JSON.stringify(log.lines)
  for (const secret of ['secret-in-query', token.accessToken, token.macKey]) t.notOk(all.includes(secret), 'nothing secret in the log')
})

t.test('at warn, nothing per request', async (t) => {
  const { app, log } = await loggedGateway(t, 'warn')
  const token = await liveToken(app)
  await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })
  t.same(log.lines, [])
})
