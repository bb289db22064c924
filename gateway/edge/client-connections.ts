// The public listener towards callers: plain HTTP, HTTPS, or HTTPS with HTTP/2 beside HTTP/1.1 by
// ALPN, with the same protections in each (config.clientTimeouts) and a close that ends idle
// connections and sessions politely.
//
// Fastify passes its `http` options only to a plain HTTP server, and sets keepAliveTimeout and
// requestTimeout only on HTTP/1 servers: an HTTPS server takes Node's HTTP options in its own
// options object; Node's HTTP/2 server (allowHTTP1) sets its own HTTP/1.1 defaults in its
// constructor, whatever it is given, so they are set on it afterwards. HTTP/2 has none of them:
// its equivalents are per session and per stream, below.
import { constants, type Http2SecureServer, type Http2Session, type ServerHttp2Stream } from 'node:http2'
import type { Server } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { ClientTimeouts } from '../config/gateway-config.ts'
import type { Http2Settings } from '../config/edge-settings.ts'
import type { TlsCertificates } from './tls.ts'

/** Node's HTTP/1 protections for callers, as its servers name them. */
function http1Options ({ headersMs, requestMs, keepAliveMs, checkIntervalMs }: ClientTimeouts): { headersTimeout: number, requestTimeout: number, keepAliveTimeout: number, connectionsCheckingInterval: number } {
  return { headersTimeout: headersMs, requestTimeout: requestMs, keepAliveTimeout: keepAliveMs, connectionsCheckingInterval: checkIntervalMs }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Ends every client connection and HTTP/2 session at once, answered or not (the drain's cut). */
    cutConnections: () => void
  }
}

/**
 * Fastify's server options for the listener. With TLS: a handshake must end within `headersMs`
 * (tls.Server's handshakeTimeout, 120 s by default, is the first thing a slow client holds).
 */
export function transportOptions (timeouts: ClientTimeouts, tls: TlsCertificates | undefined, http2: Http2Settings | false): Record<string, unknown> {
  const common = { keepAliveTimeout: timeouts.keepAliveMs, requestTimeout: timeouts.requestMs }
  const http1 = http1Options(timeouts)
  if (tls === undefined) return { ...common, http: http1 }
  const secure = { ...tls.serverOptions(), handshakeTimeout: timeouts.headersMs }
  if (http2 === false) return { ...common, https: { ...secure, ...http1 } }
  return {
    http2: true,
    // An idle session (no frame either way) is closed with a GOAWAY after keepAliveMs, as an idle keep-alive connection is.
    http2SessionTimeout: timeouts.keepAliveMs,
    https: {
      ...secure,
      allowHTTP1: true,
      // Node's default is 2^32-1, no bound at all; streams past this one are refused (RST_STREAM REFUSED_STREAM).
      // Node's own flood limits (maxSessionInvalidFrames, maxSessionRejectedStreams, nghttp2's
      // stream-reset rate limit, maxSessionMemory) keep their defaults: none is set here.
      settings: { maxConcurrentStreams: http2.maxConcurrentStreams }
    }
  }
}

/**
 * HTTP/2's counterparts of the HTTP/1 timeouts, per session and stream: a session must open its
 * first stream within `headersMs` (an HTTP/1 connection its first request's headers), then lives
 * while frames move (Fastify closes it after `http2SessionTimeout` of silence); a stream's request,
 * body included, must have arrived within `requestMs`, else 408 and the stream is reset.
 */
function guardSession (session: Http2Session, { headersMs, keepAliveMs }: ClientTimeouts): void {
  session.setTimeout(headersMs, () => session.close())
  session.once('stream', () => session.setTimeout(keepAliveMs))
}

function guardStream (stream: ServerHttp2Stream, requestMs: number): void {
  if (requestMs === 0 || stream.endAfterHeaders) return
  const timer = setTimeout(() => {
    if (stream.destroyed || stream.state.remoteClose === 1) return
    if (!stream.headersSent) stream.respond({ ':status': 408 }, { endStream: true })
    stream.close(constants.NGHTTP2_CANCEL)
  }, requestMs)
  timer.unref()
  stream.once('close', () => clearTimeout(timer))
}

/**
 * Sets what Fastify leaves out on the server it made, and the close: when the gateway closes, idle
 * HTTP/1.1 connections are ended as soon as their last answer is out (Fastify closes only those
 * idle at the start, so a client keeping one open could hold the shutdown) and every HTTP/2
 * session is sent a GOAWAY (Node 22's HTTP/2 server does not close its sessions itself): its
 * streams in flight finish, no new one starts, and it ends once they have.
 */
export function guardConnections (app: FastifyInstance, timeouts: ClientTimeouts, tls: TlsCertificates | undefined, http2: Http2Settings | false): void {
  const server = app.server as unknown as Server & { closeIdleConnections: () => void, closeAllConnections?: () => void }
  const sessions = new Set<Http2Session>()
  if (tls !== undefined) tls.attach(server as unknown as Http2SecureServer)
  if (tls !== undefined && http2 !== false) {
    Object.assign(server, http1Options(timeouts))
    const h2 = server as unknown as Http2SecureServer
    h2.on('session', (session: Http2Session) => {
      sessions.add(session)
      session.once('close', () => sessions.delete(session))
      guardSession(session, timeouts)
    })
    h2.on('stream', (stream: ServerHttp2Stream) => { guardStream(stream, timeouts.requestMs) })
  }
  // The drain's last resort (drain.ts): every HTTP/1.1 connection and every HTTP/2 session ended now.
  app.decorate('cutConnections', () => {
    server.closeAllConnections?.()
    for (const session of sessions) session.destroy()
  })
  app.addHook('preClose', async () => {
    const sweep = (): void => {
      server.closeIdleConnections()
      for (const session of sessions) session.close()
    }
    sweep()
    const timer = setInterval(sweep, 50).unref()
    server.once('close', () => clearInterval(timer))
  })
}
