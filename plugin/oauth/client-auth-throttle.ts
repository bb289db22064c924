import type { MacgateContext } from '../config/options.ts'
import { errors } from '../http/errors.ts'

const WINDOW_MS = 60_000

/**
 * Failed client authentications at the token endpoint, counted in the store per client_id and per
 * source address (every instance counts together). Past either limit the endpoint refuses for the
 * rest of the minute, whether or not the secret is right, so a guess learns nothing. Attempts
 * already in flight when the limit is reached are still decided (only failures count, so that a
 * busy client's parallel exchanges never refuse each other): a window admits at most the limit
 * plus the attacker's concurrency. A client_id is public, so anyone can hold a client at its limit;
 * the per-address limit is what a deployment behind a proxy must raise (all callers share its address).
 */
export class ClientAuthThrottle {
  readonly #config: MacgateContext
  readonly #clientKey: string
  readonly #addressKey: string

  constructor (config: MacgateContext, clientId: string, address: string) {
    this.#config = config
    this.#clientKey = `authfail:client:${clientId}`
    this.#addressKey = `authfail:addr:${address}`
  }

  /** Throws 429 (with Retry-After) while the client or the address is over its limit. */
  async refuseIfBlocked (): Promise<void> {
    const { perClient, perAddress } = this.#config.clientAuthRateLimit
    const [client, address] = await Promise.all([this.#config.store.readHits(this.#clientKey), this.#config.store.readHits(this.#addressKey)])
    const blocked = [client.count >= perClient ? client.resetMs : 0, address.count >= perAddress ? address.resetMs : 0]
    const waitMs = Math.max(...blocked)
    if (waitMs > 0) {
      const retryAfter = Math.ceil(waitMs / 1000)
      throw errors.tooManyRequests(`too many failed client authentications; retry in ${retryAfter} s`, { retryAfter })
    }
  }

  /** Counts a failure; an unknown client_id counts for the address only. */
  async failed ({ knownClient }: { knownClient: boolean }): Promise<void> {
    await Promise.all([
      this.#config.store.countHit(this.#addressKey, WINDOW_MS),
      knownClient ? this.#config.store.countHit(this.#clientKey, WINDOW_MS) : undefined
    ])
  }
}
