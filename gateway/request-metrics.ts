import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Histogram } from 'prom-client'

declare module 'fastify' {
  interface FastifyRequest {
    /** The configured open API route a request fell under (its `path`), for metrics. */
    openApiRoute: string | null
  }
}

const STATUS_CLASSES = ['1xx', '1xx', '2xx', '3xx', '4xx', '5xx']

/** The endpoint's own route, else `unmatched`. Read only off the open API: `routeOptions` builds an object per read. */
function endpointRoute (request: FastifyRequest): string {
  const own = request.routeOptions.url
  return own === undefined || own === '/*' || own === '/' ? 'unmatched' : own
}

/**
 * `macgate_request_duration_seconds` for every request, labelled by the configured open API route
 * (never the path as sent: that would be a label per URL a client invents), else the endpoint's
 * own route, else `unmatched`. A callback hook, with each label set's child kept, so that the hot
 * path pays one map lookup and one observation.
 */
export function registerRequestMetrics (app: FastifyInstance, histogram: Histogram<'route' | 'method' | 'status_class'>): void {
  app.decorateRequest('openApiRoute', null)
  const children = new Map<string, Histogram.Internal<'route' | 'method' | 'status_class'>>()
  app.addHook('onResponse', function observeDuration (request: FastifyRequest, reply: FastifyReply, done: () => void) {
    const route = request.openApiRoute ?? endpointRoute(request)
    const status = STATUS_CLASSES[Math.floor(reply.statusCode / 100)] ?? '5xx'
    const key = `${route} ${request.method} ${status}`
    let child = children.get(key)
    if (child === undefined) {
      child = histogram.labels(route, request.method, status)
      children.set(key, child)
    }
    child.observe(reply.elapsedTime / 1000)
    done()
  })
}
