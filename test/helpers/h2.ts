// Node's own HTTP/2 client against a TLS gateway, verifying its certificate with the test's CA.
import { once } from 'node:events'
import { connect as tlsConnect } from 'node:tls'
import { connect, type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2'

export interface H2Answer {
  status: number
  headers: IncomingHttpHeaders
  body: string
}

/** An HTTP/2 session to `https://localhost:PORT` (the certificate names localhost), once connected. */
export async function h2Session (port: number, ca: string, servername = 'localhost'): Promise<ClientHttp2Session> {
  // To 127.0.0.1 (where the gateway listens) under the certificate's name.
  const session = connect(`https://${servername}:${port}`, { createConnection: () => tlsConnect({ host: '127.0.0.1', port, servername, ca, ALPNProtocols: ['h2'] }) })
  session.on('error', () => {})
  await once(session, 'remoteSettings')
  return session
}

/** One request on the session; `body` sent as given. */
export async function h2Request (session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: string): Promise<H2Answer> {
  const stream = session.request(headers, { endStream: body === undefined })
  if (body !== undefined) stream.end(body)
  const [responseHeaders] = await once(stream, 'response') as [IncomingHttpHeaders]
  let text = ''
  stream.setEncoding('utf8')
  for await (const chunk of stream) text += chunk as string
  return { status: Number(responseHeaders[':status']), headers: responseHeaders, body: text }
}

/**
 * A browser stand-in over HTTP/2: keeps cookies, reads the forms' CSRF tokens, follows nothing.
 * Every answer's Set-Cookie lines are kept whole in `setCookies`, to read their attributes.
 */
export class H2Browser {
  readonly cookies = new Map<string, string>()
  readonly setCookies: string[] = []
  csrf = ''
  readonly #session: ClientHttp2Session

  constructor (session: ClientHttp2Session) {
    this.#session = session
  }

  async go (path: string, form?: Record<string, string>): Promise<H2Answer> {
    const headers: OutgoingHttpHeaders = {
      ':method': form === undefined ? 'GET' : 'POST',
      ':path': path,
      cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
      ...(form !== undefined && { 'content-type': 'application/x-www-form-urlencoded' })
    }
    const answer = await h2Request(this.#session, headers, form === undefined ? undefined : new URLSearchParams({ _csrf: this.csrf, ...form }).toString())
    const lines = answer.headers['set-cookie'] ?? []
    for (const line of lines) {
      this.setCookies.push(line)
      const pair = line.split(';')[0]!
      this.cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1))
    }
    const csrf = /name="_csrf" value="([^"]+)"/.exec(answer.body)
    if (csrf !== null) this.csrf = csrf[1]!
    return answer
  }
}
