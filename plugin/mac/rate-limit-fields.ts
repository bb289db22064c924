import type { FastifyReply } from 'fastify'
import type { QuotaReading } from './quota.js'

/** The policy's name in both fields: a fixed window of a minute. */
const POLICY = '"per-minute"'

/**
 * The IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers-08 and later, Structured Field
 * lists): `RateLimit-Policy` names the policy with its quota `q` and window `w` (seconds);
 * `RateLimit` the same policy's remaining quota `r` and seconds until the window ends `t`. The
 * second only once the client is known (its MAC proven): before that there is no count to tell.
 */
export function setRateLimitFields (reply: FastifyReply, reading: QuotaReading): void {
  reply.header('ratelimit-policy', `${POLICY};q=${reading.limit};w=60`)
  if (reading.clientId !== undefined) reply.header('ratelimit', `${POLICY};r=${reading.remaining};t=${reading.resetSeconds}`)
}
