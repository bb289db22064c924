// The client timeouts over TLS, HTTP/1.1 and HTTP/2 alike (handshake, headers, request, keep-alive),
// and HTTP/2's bound on concurrent streams with a GOAWAY on close.
import { once } from 'node:events'
import { constants } from 'node:http2'
import { connect as netConnect } from 'node:net'
import t from 'tap'
import { h2Request } from '../../helpers/h2.ts'
import { eventually } from '../../helpers/live.ts'
import { httpUpstream } from '../../helpers/faulty-upstream.ts'
import { http1Connection, session, signedHeaders, tlsGateway, withTestCa } from '../../helpers/tls-gateway.ts'

withTestCa(t)

t.test('HTTP/1.1 over TLS keeps the client timeouts: handshake, headers, request, keep-alive', async (t) => {
  for (const http2 of [true, false]) {
    const { port } = await tlsGateway(t, { http2: http2 ? {} : false, clientTimeouts: { headersMs: 300, requestMs: 700, keepAliveMs: 400, checkIntervalMs: 100 } })
    const silent = netConnect(port, '127.0.0.1')
    silent.on('error', () => {})
    await once(silent, 'connect')
    const openedAt = Date.now()
    t.ok(await eventually(async () => silent.destroyed || silent.readableEnded, 3000, 20), `${http2 ? 'h2 server' : 'https server'}: a connection that never starts its handshake is closed`)
    t.ok(Date.now() - openedAt < 2000, `within headersMs and a tick (${Date.now() - openedAt} ms)`)

    const partial = await http1Connection(port)
    partial.write('GET /health/live HTTP/1.1\r\nHost: localhost\r\n')
    const received: Buffer[] = []
    partial.on('data', (chunk: Buffer) => received.push(chunk))
    t.ok(await eventually(async () => partial.destroyed || partial.readableEnded, 3000, 20), 'headers never finished: closed')
    t.match(Buffer.concat(received).toString('latin1'), /^(HTTP\/1\.1 408|)/, 'with a 408, or just closed')

    const upload = await http1Connection(port)
    let uploaded = ''
    upload.on('data', (chunk: Buffer) => { uploaded += chunk.toString('latin1') })
    upload.write('POST /oauth2/rfc/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=')
    const sentAt = Date.now()
    t.ok(await eventually(async () => upload.destroyed || upload.readableEnded, 3000, 20), 'a body that does not arrive: closed')
    t.match(uploaded, /^HTTP\/1\.1 408/, `with a 408 after requestMs (${Date.now() - sentAt} ms)`)

    const kept = await http1Connection(port)
    let answer = ''
    kept.on('data', (chunk: Buffer) => { answer += chunk.toString('latin1') })
    kept.write('GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n')
    t.ok(await eventually(async () => answer.includes('\r\n\r\n'), 3000, 10), 'answered')
    const answeredAt = Date.now()
    t.match(answer, /^HTTP\/1\.1 200 [^]*keep-alive/i, 'kept alive')
    t.ok(await eventually(async () => kept.destroyed || kept.readableEnded, 3000, 20), 'an idle keep-alive connection is closed...')
    t.ok(Date.now() - answeredAt >= 300, `...after keepAliveMs (${Date.now() - answeredAt} ms)`)
  }
})

t.test('HTTP/2 keeps them too: a first stream within headersMs, an idle session ends, a slow body gets 408', async (t) => {
  // keepAliveMs above requestMs: the slow upload's session is not idle long enough to be closed first.
  const { port, log } = await tlsGateway(t, { clientTimeouts: { headersMs: 300, requestMs: 600, keepAliveMs: 1000, checkIntervalMs: 100 } })
  const quiet = await session(t, port)
  const openedAt = Date.now()
  await once(quiet, 'close')
  t.ok(Date.now() - openedAt < 1500, `a session that opens no stream is closed after headersMs (${Date.now() - openedAt} ms)`)

  const idle = await session(t, port)
  t.equal((await h2Request(idle, { ':path': '/health/live' })).status, 200)
  const goaway = once(idle, 'goaway')
  const idleAt = Date.now()
  const [code] = await goaway as [number]
  t.equal(code, constants.NGHTTP2_NO_ERROR, 'an idle session is sent a GOAWAY')
  t.ok(Date.now() - idleAt >= 800, `after keepAliveMs of silence, not headersMs (${Date.now() - idleAt} ms)`)

  const slow = await session(t, port)
  const upload = slow.request({ ':method': 'POST', ':path': '/oauth2/rfc/token', 'content-type': 'application/x-www-form-urlencoded' }, { endStream: false })
  upload.write('grant_type=')
  const [headers] = await once(upload, 'response') as [Record<string, unknown>]
  t.equal(headers[':status'], 408, 'a request whose body does not arrive within requestMs gets 408')
  upload.on('error', () => {})
  await once(upload, 'close')
  t.equal((await h2Request(slow, { ':path': '/health/live' })).status, 200, 'and the session goes on')
  // An absence: no event to wait for, so a moment of real time for a late line to be written.
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.same(log.lines.filter((line) => (line.level as number) >= 50), [], 'nothing logged at error: the request cut short is no fault')
})

t.test('HTTP/2: a bound on concurrent streams, GOAWAY on close with the stream in flight finished', async (t) => {
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  const upstream = await httpUpstream(t, (_request, response) => { void held.then(() => response.end('{"result":"ok"}')) })
  const { app, port, token } = await tlsGateway(t, { http2: { maxConcurrentStreams: 3 }, upstream: upstream.url, routes: [{ path: '/slow', methods: ['GET'] }] })
  const tokens = await token()
  const h2 = await session(t, port)
  t.equal(h2.remoteSettings.maxConcurrentStreams, 3, 'the SETTINGS frame says 3')

  const inflight = Array.from({ length: 5 }, async () => await h2Request(h2, signedHeaders(port, '/slow', tokens)))
  t.ok(await eventually(async () => upstream.received.length === 3, 5000, 10), 'three requests reached the upstream')
  // An absence (no fourth request): only real time shows it.
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(upstream.received.length, 3, 'and no more while those three are open: the other two wait')
  const goaway = once(h2, 'goaway')
  const closed = app.close()
  const [code] = await goaway as [number]
  t.equal(code, constants.NGHTTP2_NO_ERROR, 'closing sends the session a GOAWAY at once')
  release()
  const answers = await Promise.allSettled(inflight)
  t.same(answers.slice(0, 3).map((answer) => answer.status === 'fulfilled' ? answer.value.status : answer.reason), [200, 200, 200], 'the streams in flight finished')
  t.equal(answers.slice(3).filter((answer) => answer.status === 'rejected').length, 2, 'the two never started are refused by the GOAWAY, for the client to retry elsewhere')
  await closed
  t.pass('the close ended')
})
