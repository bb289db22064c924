import type { MacgateContext } from '../../config/options.ts'
import { errors } from '../../http/errors.ts'

const WINDOW_MS = 60_000

/**
 * Wrong user codes entered on the verification page, counted in the store per browser session, per
 * address and across the deployment (every instance together). A user code has 34.6 bits, so what
 * keeps a guesser from hitting someone's live code is the deployment-wide count (README, "Devices",
 * does the arithmetic); the narrower ones keep one guesser from using it all up alone. Past any
 * limit the page refuses every code, right or wrong, for the rest of the minute, so a guess learns
 * nothing; a code entry in flight when a limit is reached is still decided.
 */
export class UserCodeGuessLimit {
  readonly #config: MacgateContext
  readonly #keys: [string, string, string]

  constructor (config: MacgateContext, sessionKey: string, address: string) {
    this.#config = config
    this.#keys = [`usercode:fail:session:${sessionKey}`, `usercode:fail:addr:${address}`, 'usercode:fail:all']
  }

  /** Throws 429 (with Retry-After) while any of the three is at its limit. */
  async refuseIfBlocked (): Promise<void> {
    const { perSession, perAddress, perDeployment } = this.#config.userCodeGuessLimit
    const counts = await Promise.all(this.#keys.map(async (key) => await this.#config.store.readHits(key)))
    const waitMs = Math.max(...[perSession, perAddress, perDeployment].map((limit, i) => counts[i]!.count >= limit ? counts[i]!.resetMs : 0))
    if (waitMs > 0) {
      const retryAfter = Math.ceil(waitMs / 1000)
      throw errors.tooManyRequests(`too many wrong codes; try again in ${retryAfter} s`, { retryAfter })
    }
  }

  async failed (): Promise<void> {
    await Promise.all(this.#keys.map(async (key) => await this.#config.store.countHit(key, WINDOW_MS)))
  }
}
