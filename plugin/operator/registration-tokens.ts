import { hashSecret, randomBase64Url } from '../access/credentials.ts'
import type { AuditEvents } from '../observe/events.ts'
import type { RegistrationTokenRecord, RegistrationTokens } from '../store/store.ts'
import { NoSuchRecordError, RegistrationError } from './refusals.ts'

/** An initial access token's defaults: one registration, within a day. */
export const REGISTRATION_TOKEN_DEFAULTS = { uses: 1, expiresInSeconds: 86_400 } as const
const MAX_USES = 1_000_000
const MAX_EXPIRES_IN = 365 * 86_400

/** A token's id, which operators type after `registration-tokens revoke`: never starting with `-`, which a command line reads as an option. */
function newTokenId (): string {
  for (;;) {
    const id = randomBase64Url(9)
    if (!id.startsWith('-')) return id
  }
}

export interface NewRegistrationToken {
  uses?: number
  expiresInSeconds?: number
}

/**
 * Makes an initial access token (RFC 7591 §3) for registration mode `token`: the value is
 * returned this once, the store keeps its hash. Operators hand it to a developer, who sends it as
 * `Authorization: Bearer` to `POST /oauth2/register`.
 */
export async function createRegistrationToken (store: RegistrationTokens, { uses = REGISTRATION_TOKEN_DEFAULTS.uses, expiresInSeconds = REGISTRATION_TOKEN_DEFAULTS.expiresInSeconds }: NewRegistrationToken = {}, events?: AuditEvents, clock: () => number = Date.now): Promise<{ token: string, record: RegistrationTokenRecord }> {
  if (!Number.isInteger(uses) || uses < 1 || uses > MAX_USES) throw new RegistrationError(`uses must be a whole number from 1 to ${MAX_USES}`)
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 || expiresInSeconds > MAX_EXPIRES_IN) throw new RegistrationError(`expires in must be whole seconds from 1 to ${MAX_EXPIRES_IN}`)
  const token = randomBase64Url(32)
  const now = clock()
  const record: RegistrationTokenRecord = { id: newTokenId(), hash: hashSecret(token), uses, usesLeft: uses, expiresAt: now + expiresInSeconds * 1000, createdAt: now }
  await store.saveRegistrationToken(record)
  events?.record('registration_token.created', { id: record.id, uses, expiresAt: record.expiresAt })
  return { token, record }
}

/** The tokens still usable, oldest first. */
export async function listRegistrationTokens (store: RegistrationTokens): Promise<RegistrationTokenRecord[]> {
  return (await store.listRegistrationTokens()).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
}

export async function revokeRegistrationToken (store: RegistrationTokens, id: string, events?: AuditEvents): Promise<void> {
  if (!await store.revokeRegistrationToken(id)) throw new NoSuchRecordError(`no registration token ${id}`)
  events?.record('registration_token.revoked', { id })
}
