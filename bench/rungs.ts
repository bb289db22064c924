// The ladder's gateway rungs (bench/ladder.ts measures them, bench/target.ts builds them): each turns
// on one more part of a proxied request's path than the one below, every part a real option of the
// real gateway (gateway/server.ts, HotPathParts), never a copy of its code.
import type { HotPathParts } from '../gateway/server.ts'

/** In order: each rung has its own part and every part of the rungs below it. */
export const GATEWAY_STEPS = ['route-check', 'mac-check', 'header-rewrite', 'request-metrics', 'access-log', 'redis-nonces'] as const
export type GatewayStep = typeof GATEWAY_STEPS[number]

export function isGatewayStep (step: string): step is GatewayStep {
  return (GATEWAY_STEPS as readonly string[]).includes(step)
}

export interface RungParts {
  hotPath: HotPathParts
  /** The access log at info, into a file. */
  log: boolean
  /** Nonces (and tokens) on Redis, else the embedded store. */
  redis: boolean
}

/** What a gateway built for `step` has on. */
export function partsOf (step: GatewayStep): RungParts {
  const reached = GATEWAY_STEPS.indexOf(step)
  const on = (part: GatewayStep): boolean => reached >= GATEWAY_STEPS.indexOf(part)
  return {
    hotPath: { macCheck: on('mac-check'), upstreamHeaders: on('header-rewrite'), requestMetrics: on('request-metrics') },
    log: on('access-log'),
    redis: on('redis-nonces')
  }
}
