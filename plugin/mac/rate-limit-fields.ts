import type { FastifyReply } from 'fastify'
import type { QuotaReading, RouteQuota } from './quota.ts'

/** The policy's name in both fields: a fixed window of a minute. */
const POLICY = '"per-minute"'

/** Each route's `RateLimit-Policy` for its default limit, made once: most answers carry it. */
const routePolicies = new WeakMap<RouteQuota, string>()

/**
 * The IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers-08 and later, Structured Field
 * lists): `RateLimit-Policy` names the policy with its quota `q` and window `w` (seconds);
 * `RateLimit` the same policy's remaining quota `r` and seconds until the window ends `t`. The
 * second only once the client is known (its MAC proven): before that there is no count to tell.
 */
export function setRateLimitFields (reply: FastifyReply, reading: QuotaReading): void {
  reply.header('ratelimit-policy', reading.limit === reading.quota.perMinute ? routePolicy(reading.quota) : policy(reading.limit))
  if (reading.clientId !== undefined) reply.header('ratelimit', `${POLICY};r=${reading.remaining};t=${reading.resetSeconds}`)
}

function policy (limit: number): string {
  return `${POLICY};q=${limit};w=60`
}

function routePolicy (quota: RouteQuota): string {
  let field = routePolicies.get(quota)
  if (field === undefined) {
    field = policy(quota.perMinute)
    routePolicies.set(quota, field)
  }
  return field
}
