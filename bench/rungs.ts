// The ladder's gateway rungs (bench/ladder.ts measures them, bench/target.ts builds them): each turns
// on one more part of a proxied request's path than the one below, every part the real gateway's
// own, never a copy of its code (bench/ladder-gateway.ts builds it with a stand-in for each part off).

/** The parts of a proxied request's path a rung has on (bench/ladder-gateway.ts). */
export interface HotPathParts {
  macCheck: boolean
  upstreamHeaders: boolean
  requestMetrics: boolean
}

/**
 * In order: each rung has its own part and every part of the rungs below it. The tracing rungs
 * come last (the ladder climbs them above the shipped gateway): traces with 1% of requests sampled,
 * then every request sampled.
 */
export const GATEWAY_STEPS = ['route-check', 'mac-check', 'header-rewrite', 'request-metrics', 'access-log', 'redis-nonces', 'traces-1pct', 'traces-all'] as const
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
  /** Tracing off, on with `parentbased_traceidratio` 0.01, or on with every request sampled. */
  tracing: 'off' | 'ratio' | 'all'
}

export function isTracingStep (step: GatewayStep): boolean {
  return partsOf(step).tracing !== 'off'
}

/** The environment a tracing rung's gateway starts its SDK with: the standard variables, spans sent to `collector`. */
export function tracingEnv (tracing: RungParts['tracing'], collector: string): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector,
    OTEL_TRACES_SAMPLER: tracing === 'all' ? 'parentbased_always_on' : 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: '0.01'
  }
}

/** What a gateway built for `step` has on. */
export function partsOf (step: GatewayStep): RungParts {
  const reached = GATEWAY_STEPS.indexOf(step)
  const on = (part: GatewayStep): boolean => reached >= GATEWAY_STEPS.indexOf(part)
  return {
    hotPath: { macCheck: on('mac-check'), upstreamHeaders: on('header-rewrite'), requestMetrics: on('request-metrics') },
    log: on('access-log'),
    redis: on('redis-nonces'),
    tracing: on('traces-all') ? 'all' : on('traces-1pct') ? 'ratio' : 'off'
  }
}
