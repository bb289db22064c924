// The TLS tests' parts (tls.test.ts, tls-certificates.test.ts, tls-limits.test.ts): the file's test
// CA and certificate, a gateway on TLS with its log kept, and clients that verify the certificate.
import { once } from 'node:events'
import { type Agent, request as httpsRequest } from 'node:https'
import { type ClientHttp2Session } from 'node:http2'
import { connect as tlsConnect, type TLSSocket } from 'node:tls'
import type { Test } from 'tap'
import { type FastifyInstance } from 'fastify'
import { buildGateway, type GatewayConfig } from '../../gateway/index.ts'
import { MemoryStore } from '../../plugin/index.ts'
import { signRequest } from '../../plugin/client/index.ts'
import { type ServerCert, testCa, type TestCa } from './certs.ts'
import { liveToken, type LiveTokens } from './gateway.ts'
import { h2Session } from './h2.ts'
import { memoryLog } from './memory-log.ts'

/** The file's test CA, and its certificate for localhost and 127.0.0.1 (withTestCa makes them). */
export let ca: TestCa
export let main: ServerCert

/** Makes the file's CA and main certificate before its first test: called once, at its top. */
export function withTestCa (t: Test): void {
  t.before(async () => {
    ca = await testCa(t.testdir())
    main = await ca.issue('main', ['localhost', '127.0.0.1'])
  })
}

interface TlsGateway {
  app: FastifyInstance
  port: number
  log: ReturnType<typeof memoryLog>
  token: () => Promise<LiveTokens>
}

export async function tlsGateway (t: Test, config: Record<string, unknown> = {}): Promise<TlsGateway> {
  const log = memoryLog()
  const store = new MemoryStore()
  const app = await buildGateway({ store, config: { tls: { cert: main.cert, key: main.key }, ...config } as unknown as Partial<GatewayConfig>, logger: { level: 'info', stream: log.stream } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  return { app, port: (app.server.address() as { port: number }).port, log, token: async () => await liveToken(app) }
}

export async function session (t: Test, port: number, servername = 'localhost'): Promise<ClientHttp2Session> {
  const opened = await h2Session(port, ca.pem, servername)
  t.teardown(() => { opened.destroy() })
  return opened
}

export function signedHeaders (port: number, path: string, token: LiveTokens): Record<string, string> {
  const url = `https://localhost:${port}${path}`
  return { ':path': path, authorization: signRequest({ method: 'GET', url, accessToken: token.accessToken, macKey: token.macKey }) }
}

/** An HTTPS/1.1 request verifying the certificate; resolves to status, headers and body. */
export async function https1 (port: number, path: string, headers: Record<string, string> = {}, agent?: Agent): Promise<{ status: number, headers: Record<string, unknown>, body: string, protocol: string | false }> {
  const request = httpsRequest({ host: '127.0.0.1', servername: 'localhost', port, path, ca: ca.pem, headers: { host: `localhost:${port}`, ...headers }, ...(agent !== undefined && { agent }) })
  request.end()
  const [response] = await once(request, 'response') as [import('node:http').IncomingMessage]
  const protocol = (response.socket as TLSSocket).alpnProtocol ?? false
  let body = ''
  response.setEncoding('utf8')
  for await (const chunk of response) body += chunk as string
  return { status: response.statusCode!, headers: response.headers, body, protocol }
}

/** An HTTP/1.1 connection over TLS, handshaken; its errors are the test's to watch for by its state. */
export async function http1Connection (port: number): Promise<TLSSocket> {
  const socket = tlsConnect({ host: '127.0.0.1', port, ca: ca.pem, servername: 'localhost', ALPNProtocols: ['http/1.1'] })
  socket.on('error', () => {})
  await once(socket, 'secureConnect')
  return socket
}

/** The certificate a fresh handshake gets, by serial number (and the handshake's protocol). */
export async function handshake (port: number, servername?: string): Promise<{ serial: string, protocol: string | null }> {
  const socket = tlsConnect({ host: '127.0.0.1', port, ca: ca.pem, ...(servername === undefined ? { checkServerIdentity: () => undefined } : { servername }) })
  socket.on('error', () => {})
  await once(socket, 'secureConnect')
  const answer = { serial: socket.getPeerCertificate().serialNumber, protocol: socket.getProtocol() }
  socket.destroy()
  return answer
}
