// Per-upstream metrics, read from each upstream's plain counters at scrape time: the request path
// pays integer increments only. The `upstream` label is an upstream of the config (bounded).
import { Counter, Gauge, type Registry } from 'prom-client'
import { CAUSES } from './failure.ts'
import type { Upstream } from './upstream.ts'

export function registerUpstreamMetrics (registry: Registry, upstreams: () => Upstream[]): void {
  const registers = [registry]
  new Counter({ // eslint-disable-line no-new
    name: 'macgate_upstream_requests_total',
    help: 'Requests sent to each upstream (a retry counts again), refused ones included',
    labelNames: ['upstream'],
    registers,
    collect () {
      this.reset()
      for (const upstream of upstreams()) this.labels(upstream.name).inc(upstream.counts.requests)
    }
  })
  new Counter({ // eslint-disable-line no-new
    name: 'macgate_upstream_failures_total',
    help: 'Upstream requests that failed, by cause: refused, reset, dns, tls, connect_timeout, headers_timeout, body_timeout, busy (the waiting bound), no_instance (all skipped), caller_gone, other',
    labelNames: ['upstream', 'cause'],
    registers,
    collect () {
      this.reset()
      for (const upstream of upstreams()) {
        for (const cause of CAUSES) this.labels(upstream.name, cause).inc(upstream.counts.failures[cause])
      }
    }
  })
  new Counter({ // eslint-disable-line no-new
    name: 'macgate_upstream_ejections_total',
    help: 'Times an instance of each upstream was skipped for a cool-down after failures in a row',
    labelNames: ['upstream'],
    registers,
    collect () {
      this.reset()
      for (const upstream of upstreams()) this.labels(upstream.name).inc(upstream.counts.ejections)
    }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'macgate_upstream_waiting',
    help: 'Requests waiting for each upstream: state "awaiting" waits for the response headers (what the waiting bound counts), "queued" for a free connection',
    labelNames: ['upstream', 'state'],
    registers,
    collect () {
      for (const upstream of upstreams()) {
        this.labels(upstream.name, 'awaiting').set(upstream.awaiting)
        this.labels(upstream.name, 'queued').set(upstream.queued)
      }
    }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'macgate_upstream_instances_ejected',
    help: 'Instances of each upstream skipped now',
    labelNames: ['upstream'],
    registers,
    collect () {
      for (const upstream of upstreams()) this.labels(upstream.name).set(upstream.ejected)
    }
  })
}
