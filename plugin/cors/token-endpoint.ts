import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler, onSendHookHandler } from 'fastify'
import type { MacgateContext } from '../config/options.ts'
import { allowOrigin, allowPreflight, isPreflight, varyOnOrigin } from './headers.ts'
import type { ClientRecord } from '../store/store.ts'
import type { ClientOrigins, OriginClients } from './client-origins.ts'

/** A request's Origin and the clients that registered it, once looked up. */
const looked = new WeakMap<FastifyRequest, { origin: string, clients: OriginClients }>()
/** The client a request authenticated as, for the success answer's CORS decision. */
const served = new WeakMap<FastifyRequest, ClientRecord>()

function hasPublicClient (clients: OriginClients): boolean {
  for (const isPublic of clients.values()) if (isPublic) return true
  return false
}

/** Called by the endpoint once the client has authenticated. */
export function servedClient (request: FastifyRequest, client: ClientRecord): void {
  served.set(request, client)
}

/**
 * CORS for the endpoints a browser app calls itself, the token endpoint and revocation (contract
 * §11): only public clients' origins; a confidential client's secret never belongs in a browser.
 * A success is readable only from the origins of the public client it was for; any other answer
 * (a refusal) from any public client's origin, so that the app can read the code. A request without
 * Origin costs one header check.
 */
export class TokenEndpointCors {
  readonly #origins: ClientOrigins

  constructor (origins: ClientOrigins) {
    this.#origins = origins
  }

  /**
   * Route hooks: look the origin up first (a store outage is the endpoint's 503), then write the
   * answer's headers. `config.cors` is read per request: a gateway's reload may turn it on or off.
   */
  hooks (config: MacgateContext): { onRequest?: onRequestAsyncHookHandler[], onSend?: onSendHookHandler[] } {
    return {
      onRequest: [async (request) => {
        const origin = request.headers.origin
        if (origin !== undefined && config.cors) looked.set(request, { origin, clients: await this.#origins.lookup(origin) })
      }],
      onSend: [async (request, reply, payload) => {
        this.#answer(request, reply)
        return payload
      }]
    }
  }

  /** A preflight from a public client's origin, which the endpoint answers with 204 instead of 405. */
  allowsPreflight (request: FastifyRequest): boolean {
    const found = looked.get(request)
    return found !== undefined && isPreflight(request) && hasPublicClient(found.clients)
  }

  /** The preflight's 204: a form POST, which needs no header beyond the safelisted ones but may name its type. */
  async sendPreflight (reply: FastifyReply): Promise<FastifyReply> {
    allowPreflight(reply, ['POST'], ['content-type'])
    return await reply.code(204).send()
  }

  #answer (request: FastifyRequest, reply: FastifyReply): void {
    const found = looked.get(request)
    if (found === undefined) return
    varyOnOrigin(reply)
    const client = served.get(request)
    const readable = reply.statusCode < 300 && client !== undefined
      ? client.public === true && found.clients.has(client.id)
      : hasPublicClient(found.clients)
    if (readable) allowOrigin(reply, found.origin)
  }
}
