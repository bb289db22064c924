import type { RouteQuota } from '../plugin/index.ts'
import type { RouteRule } from './config.ts'

/** A route's quota as the MAC check counts it: named by the route's path, so each route counts its own requests. */
export function routeQuota (rule: RouteRule): RouteQuota | undefined {
  return rule.quota === undefined ? undefined : { route: rule.path, perMinute: rule.quota.perMinute }
}
