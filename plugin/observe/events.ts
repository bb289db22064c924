import { EventEmitter } from 'node:events'

/**
 * What the audit trail records, by event type. Identifiers only: no secret, code, token, password or
 * mac_key ever goes into an event, so that a subscriber may log every field as it is.
 */
export interface AuditEventMap {
  /** A user's authorization produced a grant (a code, or an implicit token). */
  'grant.issued': { grantId: string, clientId: string, userId: string, scope: string[], responseType: 'code' | 'token' }
  'code.exchanged': { grantId: string, clientId: string, userId: string }
  'refresh.rotated': { grantId: string, clientId: string, userId: string }
  /** A spent code or refresh token came back (outside any grace), so the whole grant was revoked. */
  'reuse.detected': { grantId: string, clientId: string, what: 'code' | 'refresh token' }
  /** A grant ended on request: the client (RFC 7009), the user (their apps page), an operator. */
  'grant.revoked': { grantId: string, clientId: string, by: 'client' | 'user' | 'operator' }
  /**
   * `by`: absent for an operator (the CLI, the admin API); `registration` for a developer at the
   * registration endpoints (RFC 7591/7592), with their address and, in `token` mode, which
   * initial access token they used; `console` for its owner in the developer console, with their
   * user id (`userId`) and address.
   */
  'client.registered': { clientId: string, name: string, by?: 'registration' | 'console', via?: 'open' | 'token', initialTokenId?: string, userId?: string, ip?: string }
  'client.removed': { clientId: string, by?: 'registration' | 'console', userId?: string, ip?: string }
  'client.secret_rotated': { clientId: string, graceSeconds: number, by?: 'console', userId?: string, ip?: string }
  'client.updated': { clientId: string, fields: string[], by?: 'registration' | 'console', userId?: string, ip?: string }
  /** An operator set or cleared a client's owner (the user whose console lists it). */
  'client.owner_changed': { clientId: string, ownerId: string | null }
  /** An operator made or revoked an initial access token for dynamic registration. */
  'registration_token.created': { id: string, uses: number, expiresAt: number }
  'registration_token.revoked': { id: string }
  'signin.failed': { username: string, ip: string, reason: 'bad credentials' }
  'consent.given': { clientId: string, userId: string, scope: string[] }
  'consent.denied': { clientId: string, userId: string }
  /** The user removed an app's access: every grant of theirs for it revoked, the consent forgotten. */
  'consent.revoked': { clientId: string, userId: string, grants: number }
  /** A client reached its quota on a route: the first refusal in the window, on this instance. */
  'quota.exceeded': { clientId: string, route: string, limit: number, window: number }
  /** A device asked to be authorized (RFC 8628): the user code is out, nobody has decided. */
  'device.started': { grantId: string, clientId: string, scope: string[] }
  'device.approved': { grantId: string, clientId: string, userId: string, scope: string[] }
  'device.denied': { grantId: string, clientId: string, userId: string }
  /** The approved device's poll got its token set (once). */
  'device.issued': { grantId: string, clientId: string, userId: string }
  'user.created': { userId: string, username: string }
  'user.removed': { userId: string, username: string, grants: number }
  'user.password_changed': { userId: string, username: string }
  /** An operator allowed or stopped a user's developer console. */
  'user.developer_changed': { userId: string, username: string, developer: boolean }
}

export type AuditEventType = keyof AuditEventMap
export type AuditEvent = { [K in AuditEventType]: { type: K, at: number } & AuditEventMap[K] }[AuditEventType]

/**
 * The plugin's audit trail: a typed event emitter. Subscribe to one type with `on(type, ...)`, or
 * to every event with `on('audit', ...)`; each event carries its `type` and `at` (ms since the
 * epoch). A listener that throws becomes a process warning, never the failure of the request that
 * caused the event.
 */
export class AuditEvents extends EventEmitter {
  readonly #clock: () => number

  /** `clock`: the plugin's (`at` in its time, which tests step). */
  constructor (clock: () => number = Date.now) {
    super()
    this.#clock = clock
  }

  record<K extends AuditEventType> (type: K, fields: AuditEventMap[K]): void {
    if (this.listenerCount(type) === 0 && this.listenerCount('audit') === 0) return
    const event = { type, at: this.#clock(), ...fields } as AuditEvent
    // Each listener on its own: one that throws must not hide the event from the others (the log).
    for (const listener of [...this.listeners(type), ...this.listeners('audit')]) {
      try {
        listener.call(this, event)
      } catch (error) {
        process.emitWarning(`macgate audit listener failed: ${(error as Error).message}`)
      }
    }
  }

  override on (type: 'audit', listener: (event: AuditEvent) => void): this
  override on<K extends AuditEventType> (type: K, listener: (event: Extract<AuditEvent, { type: K }>) => void): this
  override on (type: string, listener: (...args: any[]) => void): this {
    return super.on(type, listener)
  }
}
