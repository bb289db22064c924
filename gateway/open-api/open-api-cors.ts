// CORS on the open API's configured routes (contract §11): a browser app on its own origin calls
// the API with its MAC token. The preflight is answered here, before the MAC check (it carries no
// credentials, and spends no nonce); every answer says which origin may read it.
import type { FastifyReply, FastifyRequest } from 'fastify'
import {
  allowOrigin, allowPreflight, dropCorsHeaders, isPreflight, requestedHeaders, varyOnOrigin, type ClientOrigins, type OriginClients
} from '../../plugin/index.ts'
import { isForwarded, type UpstreamHeaderOptions } from './upstream-request.ts'

/** What a signed call always needs: its MAC header, and a body's type. */
const ALWAYS_ALLOWED = ['authorization', 'content-type']

/** The request's Origin and its clients, for the answer; for an allowed preflight, what it grants. */
interface Looked {
  origin: string
  clients: OriginClients
  preflight?: { methods: readonly string[], headers: string[] }
}
const looked = new WeakMap<FastifyRequest, Looked>()

/**
 * Allowed origins: those of the registered clients (their redirect URIs' and allowed origins).
 * A verified request's answer (the upstream's, or a 502/504 in its place) is readable only from an
 * origin of the client whose token signed it (client A's page cannot read what client B's token
 * fetched); every other answer of a configured route, each refusal, from any allowed origin, so that the app can read the code. Requests without Origin
 * cost one header check, here and in the answer's hook.
 */
export class OpenApiCors {
  readonly #origins: ClientOrigins
  readonly #headerOptions: UpstreamHeaderOptions

  constructor (origins: ClientOrigins, headerOptions: UpstreamHeaderOptions) {
    this.#origins = origins
    this.#headerOptions = headerOptions
  }

  /**
   * For a request with Origin to a configured route (`methods`: the route's) not yet looked at: looks
   * the origin up, then answers a preflight (204) or calls `next` (the route's checks, again); `done`
   * takes a store outage. False, having done nothing, for any other request.
   */
  defer (request: FastifyRequest, reply: FastifyReply, methods: readonly string[] | undefined, next: () => void, done: (error?: Error) => void): boolean {
    const origin = request.headers.origin
    if (origin === undefined || methods === undefined || looked.has(request)) return false
    const go = (clients: OriginClients): void => {
      if (!isPreflight(request)) {
        looked.set(request, { origin, clients })
        return next()
      }
      looked.set(request, { origin, clients, ...(clients.size > 0 && { preflight: { methods, headers: this.#allowedHeaders(request) } }) })
      reply.code(204).send()
    }
    const clients = this.#origins.lookup(origin)
    if (clients instanceof Promise) clients.then(go, done)
    else go(clients)
    return true
  }

  /** authorization and content-type, plus what the preflight asks for that can reach the upstream. */
  #allowedHeaders (request: FastifyRequest): string[] {
    const asked = requestedHeaders(request).filter((name) => isForwarded(name, this.#headerOptions))
    return [...new Set([...ALWAYS_ALLOWED, ...asked])]
  }
}

/**
 * onSend (callback style, nothing to await): the CORS headers of an answer to a request `defer`
 * looked at; an upstream's own are dropped, this decides. One for every config (a reload may turn
 * CORS on or off while requests are in flight).
 */
export function answerCors (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void): void {
  const found = looked.get(request)
  if (found !== undefined) corsHeaders(request, reply, found)
  done(null, payload)
}

function corsHeaders (request: FastifyRequest, reply: FastifyReply, found: Looked): void {
  dropCorsHeaders(reply)
  varyOnOrigin(reply)
  if (found.preflight !== undefined) allowPreflight(reply, found.preflight.methods, found.preflight.headers)
  const identity = request.macIdentity
  const readable = identity === null ? found.clients.size > 0 : found.clients.has(identity.clientId)
  if (readable) allowOrigin(reply, found.origin)
}

/** The open API's CORS, unless the gateway's `cors` setting turned it off. */
export function openApiCors (cors: boolean, origins: ClientOrigins, headerOptions: UpstreamHeaderOptions): OpenApiCors | undefined {
  return cors ? new OpenApiCors(origins, headerOptions) : undefined
}
