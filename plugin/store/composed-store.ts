import type { AccountStore, ClientStore, CodeStore, ConsentStore, DeviceCodeStore, GrantIndex, HitCounters, NonceLog, NonceReports, RegistrationTokens, TokenStore } from './roles.ts'

/** A store's parts, one per role: each role's methods are its part's. */
export interface StoreParts {
  clients: ClientStore
  accounts: AccountStore
  consents: ConsentStore
  grantIndex: GrantIndex
  grants: CodeStore & TokenStore
  devices: DeviceCodeStore
  nonces: NonceLog & NonceReports
  hits: HitCounters
  registrationTokens: RegistrationTokens
}

/** Every method name of a role, each once: the compiler refuses a name missing or one too many. */
type MethodNames<Role> = { readonly [Name in keyof Role]-?: true }

/**
 * Which methods each part gives the store. Only these: a part's own helpers (a memory part's
 * `sweep`, the Redis grants' `notify`) stay the part's. Each method's signature is its role's
 * (roles.ts) and its body its part's; this names it, for the one copy made at construction.
 */
const PART_METHODS: { readonly [Part in keyof StoreParts]: MethodNames<StoreParts[Part]> } = {
  clients: { saveClient: true, getClient: true, listClients: true, rotateClientSecret: true, updateClient: true, removeClient: true, clientsOfOrigin: true },
  accounts: { createUser: true, getUserByName: true, updateUser: true, removeUser: true, saveSession: true, getSession: true, endSessions: true },
  consents: { getConsent: true, addConsent: true, listConsents: true, forgetConsent: true, countConsents: true },
  grantIndex: { trackGrant: true, listUserGrants: true, forgetUserGrant: true },
  grants: { saveCode: true, getCode: true, redeemCode: true, saveTokens: true, getAccessToken: true, getRefreshToken: true, rotateRefreshToken: true, revokeGrant: true, onRevocation: true },
  devices: { saveDeviceCode: true, findUserCode: true, getDeviceCode: true, decideDeviceCode: true, pollDeviceCode: true, redeemDeviceCode: true },
  nonces: { useNonce: true, useCountedNonce: true, quotaUsed: true, nonceStats: true },
  hits: { countHit: true, readHits: true },
  registrationTokens: { saveRegistrationToken: true, listRegistrationTokens: true, revokeRegistrationToken: true, useRegistrationToken: true }
}

/**
 * A store made of one part per role: each role's method is its part's own, bound to the part once
 * when the store is made, so that a call (`useNonce`, on every request) goes straight to the part:
 * no forwarder between, nothing made per call, and an answer the part gives at once stays at once.
 * A subclass's own method of a role's name is kept (a test's store with one fault). Both stores are
 * one of these; what differs is their parts and their lifecycle (`StoreLifecycle`, the subclass's).
 */
export interface ComposedStore extends ClientStore, AccountStore, ConsentStore, GrantIndex, CodeStore, TokenStore, DeviceCodeStore, NonceLog, NonceReports, HitCounters, RegistrationTokens {}

export abstract class ComposedStore {
  /**
   * Gives the store its parts' methods: the last step of the subclass's constructor. Last, and
   * defined rather than assigned, so that the store keeps fast properties: V8 turns an object into a
   * dictionary (every read of `store.useNonce` a lookup) when it gets properties by computed name,
   * private fields included, once it has many.
   */
  protected compose (parts: StoreParts): void {
    for (const part of Object.keys(PART_METHODS) as Array<keyof StoreParts>) {
      const implementation = parts[part] as unknown as Record<string, (...args: unknown[]) => unknown>
      for (const name of Object.keys(PART_METHODS[part])) {
        // Not enumerable, as a method; writable, as a method (a test swaps one for a fault).
        if (!(name in this)) Object.defineProperty(this, name, { value: implementation[name]!.bind(implementation), writable: true, configurable: true })
      }
    }
  }
}
