// Stopping without dropping a request (SIGTERM): readiness fails first, so that a load balancer
// stops sending; the listener serves on for `drainDelayMs`, then closes; requests in flight get
// `drainMs` to finish before their connections are cut.
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'

/** Whether the process is draining: readiness reads it (health.ts). */
export class Drain {
  #draining = false

  get draining (): boolean {
    return this.#draining
  }

  begin (): void {
    this.#draining = true
  }
}

export interface DrainTimes {
  /** ms the listener keeps serving after readiness turned 503. */
  drainDelayMs: number
  /** ms in-flight requests then have before every connection is cut. */
  drainMs: number
}

/**
 * Readiness 503 at once, serve on for `drainDelayMs`, then close: Fastify stops listening and
 * answers what arrives on open connections 503, idle keep-alive connections are closed (assembly/build-gateway.ts
 * sweeps them as their last answer goes out), and whatever is still running after `drainMs` is cut.
 * Resolves once the gateway is closed (its store and upstreams with it).
 */
export async function drainAndClose (app: FastifyInstance, { drainDelayMs, drainMs }: DrainTimes): Promise<void> {
  app.drain.begin()
  if (drainDelayMs > 0) await sleep(drainDelayMs)
  const cut = setTimeout(() => {
    app.log.warn({ drainMs }, 'requests still in flight after drainMs: their connections are cut')
    app.cutConnections()
  }, drainMs).unref()
  try {
    await app.close()
  } finally {
    clearTimeout(cut)
  }
}
