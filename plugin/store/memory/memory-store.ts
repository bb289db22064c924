import { MemoryAccounts } from './accounts.ts'
import { MemoryClients } from './clients.ts'
import { MemoryConsents } from './consents.ts'
import { MemoryDeviceCodes } from './device-codes.ts'
import { MemoryGrantIndex } from './grant-index.ts'
import { MemoryGrants } from './grants.ts'
import { MemoryHitCounters } from './hit-counters.ts'
import { MemoryNonces } from './nonces.ts'
import { MemoryRegistrationTokens } from './registration-tokens.ts'
import { ComposedStore } from '../composed-store.ts'
import type { Store } from '../roles.ts'

/** Nonces held at most by default: 24,000 requests a second for 11 minutes (see the constructor). */
export const DEFAULT_MAX_NONCES = 16_000_000

export interface MemoryStoreOptions {
  /** How often expired records are dropped, in ms. */
  sweepIntervalMs?: number
  /**
   * The most nonces kept for replay detection, at most 21 bytes each (8 of a keyed hash, in tables
   * at least 3/8 full). The default, 16,000,000 (at most ~340 MB), holds 24,000 signed requests a
   * second for the 11 minutes the longest-kept nonce is held, beyond what one core verifies
   * (README, "Capacity"); when that many are live, signed requests get 503.
   */
  maxNonces?: number
  /** The store's only clock, in Unix ms: every expiry and time it records (tests step it). */
  clock?: () => number
}

/**
 * The embedded store: everything in this process, lost on exit, one part per role (this folder).
 * Each method runs to completion without awaiting (removing a client revokes its grants, and
 * removing a user ends their sessions, within the same step), which makes every read-modify-write
 * atomic as the Redis scripts are.
 */
export class MemoryStore extends ComposedStore implements Store {
  readonly kind = 'memory'
  /** Each part that drops expired records itself, swept together. */
  readonly #sweepers: Array<{ sweep: () => void }>
  #secret: string | undefined
  readonly #sweeper: NodeJS.Timeout

  constructor ({ sweepIntervalMs = 60_000, maxNonces = DEFAULT_MAX_NONCES, clock = Date.now }: MemoryStoreOptions = {}) {
    const grantIndex = new MemoryGrantIndex(clock)
    const grants = new MemoryGrants(clock)
    const accounts = new MemoryAccounts(clock)
    const nonces = new MemoryNonces(clock, maxNonces)
    const hits = new MemoryHitCounters(clock)
    const devices = new MemoryDeviceCodes(clock, grants)
    const registrationTokens = new MemoryRegistrationTokens(clock)
    const consents = new MemoryConsents(clock)
    super()
    this.#sweepers = [grants, devices, hits, nonces, accounts, grantIndex, registrationTokens]
    this.#sweeper = setInterval(() => { for (const part of this.#sweepers) part.sweep() }, sweepIntervalMs).unref()
    this.compose({ clients: new MemoryClients(grantIndex, grants, consents), accounts, consents, grantIndex, grants, devices, nonces, hits, registrationTokens })
  }

  /** In this process: it answers whenever the process does. */
  async ping (): Promise<void> {}

  async serverSecret (proposed: string): Promise<string> {
    this.#secret ??= proposed
    return this.#secret
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }
}
