import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Metrics } from '../../plugin/index.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The configured open API route a request fell under (its `path`), for metrics. */
    openApiRoute: string | null
  }
}

/** By hundreds; below 100 is counted as 1xx and 600 or more as 5xx. */
const STATUS_CLASSES = ['1xx', '1xx', '2xx', '3xx', '4xx', '5xx']

/** The endpoint's own route, else `unmatched`. Read only off the open API: `routeOptions` builds an object per read. */
function endpointRoute (request: FastifyRequest): string {
  const own = request.routeOptions.url
  return own === undefined || own === '/*' || own === '/' ? 'unmatched' : own
}

type Histogram = Metrics['requestDuration']
type Child = ReturnType<Histogram['labels']>

/**
 * `macgate_request_duration_seconds` for every request, labelled by the configured open API route
 * (never the path as sent: that would be a label per URL a client invents), else the endpoint's
 * own route, else `unmatched`. A callback hook, with each label set's child kept by route, method
 * and status class in nested maps (no key string built per request): per request, two map lookups
 * (route, method), an array index (status class) and one observation; a label set's first request
 * also makes its child. Off the open API, the endpoint's route is read from `routeOptions` too.
 */
export function registerRequestMetrics (app: FastifyInstance, histogram: Histogram): void {
  app.decorateRequest('openApiRoute', null)
  const children = new Map<string, Map<string, Array<Child | undefined>>>()
  app.addHook('onResponse', function observeDuration (request: FastifyRequest, reply: FastifyReply, done: () => void) {
    const route = request.openApiRoute ?? endpointRoute(request)
    const statusIndex = Math.min(5, Math.max(1, Math.floor(reply.statusCode / 100)))
    let byMethod = children.get(route)
    if (byMethod === undefined) children.set(route, byMethod = new Map())
    let byStatus = byMethod.get(request.method)
    if (byStatus === undefined) byMethod.set(request.method, byStatus = [])
    let child = byStatus[statusIndex]
    if (child === undefined) byStatus[statusIndex] = child = histogram.labels(route, request.method, STATUS_CLASSES[statusIndex]!)
    child.observe(reply.elapsedTime / 1000)
    done()
  })
}
