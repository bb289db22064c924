import { Counter, type Registry } from 'prom-client'
import type { AuditEvents } from '../observe/events.ts'
import type { Quotas } from './quota.ts'

/** Clients named in the metric's label at most; the others are counted under `other`. */
export const MAX_LABELLED_CLIENTS = 100

/**
 * What an operator sees of quota refusals: `macgate_quota_rejections_total{client}`, its label
 * bounded to the first `MAX_LABELLED_CLIENTS` clients refused since the start (the rest `other`),
 * and a `quota.exceeded` audit event on the first refusal of a (client, route) in a window.
 */
export function watchQuotaRefusals (quotas: Quotas, registry: Registry, events: AuditEvents): void {
  const rejections = new Counter({
    name: 'macgate_quota_rejections_total',
    help: 'Verified open API requests refused over their client\'s quota (429), by client (the first 100 refused; the rest "other")',
    labelNames: ['client'],
    registers: [registry]
  })
  const labelled = new Set<string>()
  quotas.onRefusal((reading, window, first) => {
    const clientId = reading.clientId!
    if (!labelled.has(clientId) && labelled.size < MAX_LABELLED_CLIENTS) labelled.add(clientId)
    rejections.inc({ client: labelled.has(clientId) ? clientId : 'other' })
    if (first) events.record('quota.exceeded', { clientId, route: reading.quota.route, limit: reading.limit, window })
  })
}
