// The caller's signal as undici takes it: a real upstream that never answers, a real pool.
import { createServer, IncomingMessage } from 'node:http'
import { Socket } from 'node:net'
import { once } from 'node:events'
import t from 'tap'
import { Pool } from 'undici'
import { CallerSignal, callerLeft, signalOf } from '../../../../gateway/open-api/upstreams/caller-signal.ts'

t.test('aborting the signal cancels undici\'s request to a hung upstream', async (t) => {
  const sockets: Socket[] = []
  const upstream = createServer(() => {}) // never answers
  upstream.on('connection', (socket) => sockets.push(socket))
  upstream.listen(0, '127.0.0.1')
  await once(upstream, 'listening')
  const { port } = upstream.address() as { port: number }
  const pool = new Pool(`http://127.0.0.1:${port}`)
  t.teardown(async () => { await pool.destroy(); upstream.close() })

  const caller = new IncomingMessage(new Socket())
  const signal = signalOf(caller)
  t.equal(signalOf(caller), signal, 'one signal per caller')
  const answer = pool.request({ path: '/', method: 'GET', signal })
  await once(upstream, 'request')
  callerLeft(caller)
  await t.rejects(answer, { code: 'UND_ERR_ABORTED' }, 'undici ends the request as aborted')
  await once(sockets[0]!, 'close')
  t.pass('the upstream saw its connection closed')
  t.equal(signal.aborted, true)
})

t.test('listeners: each removed one is not called, each kept one once, later aborts are nothing', async (t) => {
  const signal = new CallerSignal()
  const calls: string[] = []
  const first = (): void => { calls.push('first') }
  const second = (): void => { calls.push('second') }
  const third = (): void => { calls.push('third') }
  signal.addEventListener('abort', first)
  signal.addEventListener('abort', second)
  signal.addEventListener('abort', third)
  signal.removeEventListener('abort', second)
  signal.removeEventListener('abort', () => {})
  signal.abort()
  signal.abort()
  t.same(calls, ['first', 'third'])
  signal.removeEventListener('abort', first)
  callerLeft(new IncomingMessage(new Socket()))
  t.pass('a caller without a signal (refused before the proxy) leaves quietly')
})
