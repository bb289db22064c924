// The ladder's gateway (bench/rungs.ts): the real gateway with a stand-in for each part of a
// proxied request's path a rung has off. The one bench file that builds the gateway from its
// internals (.dependency-cruiser.mjs, LADDER_BENCH): the package's entry has no such switch, so no
// option a library user can pass leaves the MAC check out.
import type { FastifyInstance } from 'fastify'
import type { MacAuthHook } from '../plugin/index.ts'
import { assembleGateway, SHIPPED_PARTS, type GatewayOptions, type RequestPathParts } from '../gateway/assembly/build-gateway.ts'
import type { HotPathParts } from './rungs.ts'

/** The route-check rung's check: every request goes on, verified or not. */
const admitUnchecked: MacAuthHook = (_request, _reply, done) => { done() }

/** The parts a rung has, each either the shipped one or its stand-in. */
export function rungParts ({ macCheck, upstreamHeaders, requestMetrics }: HotPathParts): RequestPathParts {
  return {
    check: macCheck ? SHIPPED_PARTS.check : () => admitUnchecked,
    // Off: the headers as they came (reply-from's own default), in an object of their own as the
    // shipped rewrite's are: the proxy keys it for the dispatcher (proxy.ts).
    rewriteHeaders: upstreamHeaders ? SHIPPED_PARTS.rewriteHeaders : (_request, headers) => Object.assign({}, headers),
    requestMetrics: requestMetrics ? SHIPPED_PARTS.requestMetrics : () => {}
  }
}

/** `buildGateway`, with only the parts of a proxied request's path that `hotPath` has on. */
export async function buildLadderGateway (options: GatewayOptions, hotPath: HotPathParts): Promise<FastifyInstance> {
  return await assembleGateway(options, rungParts(hotPath))
}
