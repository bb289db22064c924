// Real upstreams on loopback that misbehave as real ones do: refuse (a closed port), reset, hang,
// trickle, answer slowly, die; each counts what it received and sees its sockets close.
import { once } from 'node:events'
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createNetServer, type Server, type Socket } from 'node:net'
import type { Test } from 'tap'

export interface Faulty {
  url: string
  port: number
  /** Requests (http) or connections (net) received, by method for http ones. */
  received: Array<{ method: string, url: string }>
  /** Each accepted socket and when it closed (ms, Date.now), for cancellation checks. */
  sockets: Array<{ socket: Socket, closedAt?: number }>
  server: Server
  /** Stops listening and drops every connection: later connections are refused. */
  kill: () => Promise<void>
}

async function listening (t: Test, server: Server, protocol = 'http'): Promise<Faulty> {
  const faulty: Faulty = { url: '', port: 0, received: [], sockets: [], server, kill: async () => {} }
  server.on('connection', (socket: Socket) => {
    const entry: { socket: Socket, closedAt?: number } = { socket }
    faulty.sockets.push(entry)
    socket.on('close', () => { entry.closedAt = Date.now() })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  faulty.port = (server.address() as { port: number }).port
  faulty.url = `${protocol}://127.0.0.1:${faulty.port}`
  faulty.kill = async () => {
    if (!server.listening) return
    const closed = once(server, 'close')
    server.close()
    for (const { socket } of faulty.sockets) socket.destroy()
    await closed
  }
  t.teardown(faulty.kill)
  return faulty
}

/** An HTTP upstream answering with `handle`, counting every request (its body read first). */
export async function httpUpstream (t: Test, handle: (request: IncomingMessage, response: ServerResponse, n: number) => void): Promise<Faulty> {
  const server = createHttpServer()
  server.keepAliveTimeout = 60_000
  const faulty = await listening(t, server)
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    request.resume()
    request.on('end', () => {
      faulty.received.push({ method: request.method!, url: request.url! })
      handle(request, response, faulty.received.length)
    })
  })
  return faulty
}

/** Answers `{"result":"ok",...}` naming `name`, after `delayMs`. */
export async function answeringUpstream (t: Test, name = 'ok', delayMs = 0): Promise<Faulty> {
  return await httpUpstream(t, (_request, response) => {
    const answer = (): void => {
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify({ result: 'ok', description: 'success', data: { name }, code: 0 }))
    }
    if (delayMs === 0) answer()
    else setTimeout(answer, delayMs).unref()
  })
}

/** A port nothing listens on: every connection is refused. */
export async function refusingUpstream (t: Test): Promise<Faulty> {
  const faulty = await listening(t, createNetServer())
  await faulty.kill()
  return faulty
}

/** Accepts, reads the request, then resets the connection (RST) without a byte of answer. */
export async function resettingUpstream (t: Test): Promise<Faulty> {
  const server = createNetServer((socket) => {
    socket.once('data', (data: Buffer) => {
      faulty.received.push({ method: data.toString('latin1').split(' ')[0]!, url: '' })
      socket.resetAndDestroy()
    })
  })
  const faulty = await listening(t, server)
  return faulty
}

/** Accepts and never answers (not even TLS's handshake); records what arrives. */
export async function hangingUpstream (t: Test, protocol = 'http'): Promise<Faulty> {
  const server = createNetServer((socket) => {
    socket.on('data', (data: Buffer) => {
      faulty.received.push({ method: data.toString('latin1').split(' ')[0]!, url: '' })
    })
  })
  const faulty = await listening(t, server, protocol)
  return faulty
}

/** Sends the headers and a first chunk of a longer body, then nothing. */
export async function tricklingUpstream (t: Test): Promise<Faulty> {
  return await httpUpstream(t, (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' })
    response.write('{"result":"ok","data":"')
  })
}
