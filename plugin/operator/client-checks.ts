// A client's fields as an operator gives them (a new client, an update) and the checks every door
// makes on them: the admin API, the CLI, the registration endpoint and the developer console.
import { registrationProblem } from '../oauth/redirect-uri.ts'
import { originProblem } from '../http/origins.ts'
import { GRANT_TYPES, grantTypesOfResponseTypes, normalGrantTypes, responseTypesOf, type GrantType, type ResponseType } from '../access/grant-types.ts'
import type { SelfRegistration } from '../store/store.ts'
import { RegistrationError } from './refusals.ts'

export interface NewClient {
  name: string
  redirectUris: string[]
  /** Space-separated; the client's allowed and default scopes. */
  scope?: string
  /** Default: code and token; a public client or one requiring PKCE, code only. With `grantTypes`, theirs. */
  responseTypes?: ResponseType[]
  /** RFC 7591 names; default: those of the response types. `authorization_code` brings `refresh_token`. */
  grantTypes?: string[]
  requirePkce?: boolean
  /** A public client (RFC 6749 §2.1): no secret, PKCE required; for apps in a browser or on a device. */
  public?: boolean
  /** Origins besides the redirect URIs' that may call the open API from a browser (CORS). */
  allowedOrigins?: string[]
  /** HmacSha1 (the default, the spec's only one) or HmacSha256 (opt-in). */
  macAlgorithm?: 'HmacSha1' | 'HmacSha256'
  /** May introspect every client's tokens at /oauth2/introspect. */
  resourceServer?: boolean
  accessTokenTtl?: number
  refreshTokenTtl?: number
  /** Its own limit per minute on every route with a quota, instead of the route's (0 blocks). */
  quotaPerMinute?: number
  /** Set by the registration endpoint (RFC 7591) and the developer console only: the client registered itself. */
  selfRegistration?: SelfRegistration
  /** The user whose app it is (the developer console's). */
  ownerId?: string
}

/** What `updateClient` may change; a field left out stays as it is. */
export interface ClientUpdate {
  redirectUris?: string[]
  /** Replaces the list; `[]` removes every allowed origin. */
  allowedOrigins?: string[]
  responseTypes?: ResponseType[]
  /** Replaces the grant types (and the response types with them); response types alone keep the device grant. */
  grantTypes?: string[]
  /** `null` removes the client's own limit: the routes' defaults apply again. */
  quotaPerMinute?: number | null
}

/** A URI, origin or scope list as a field: room for any real one (each is checked further below). */
const text = { type: 'string', minLength: 1, maxLength: 2048 } as const

/**
 * A new client's fields and their limits, for every door: the admin API validates its body with
 * this schema (its fields by their snake_case names), and `registerClient`, which the CLI calls,
 * checks the same limits.
 */
export const newClientSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'redirectUris'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    redirectUris: { type: 'array', minItems: 1, maxItems: 20, items: text },
    scope: text,
    responseTypes: { type: 'array', minItems: 1, items: { enum: ['code', 'token'] } },
    grantTypes: { type: 'array', minItems: 1, maxItems: 10, items: { enum: GRANT_TYPES } },
    requirePkce: { type: 'boolean' },
    public: { type: 'boolean' },
    allowedOrigins: { type: 'array', maxItems: 20, items: text },
    resourceServer: { type: 'boolean' },
    macAlgorithm: { enum: ['HmacSha1', 'HmacSha256'] },
    accessTokenTtl: { type: 'integer', minimum: 1 },
    refreshTokenTtl: { type: 'integer', minimum: 1 },
    quotaPerMinute: { type: 'integer', minimum: 0, maximum: 1_000_000_000 }
  }
} as const

export const { name: NAME, redirectUris: REDIRECT_URIS, allowedOrigins: ALLOWED_ORIGINS, quotaPerMinute: QUOTA } = newClientSchema.properties

/** A client's own quota: whole requests a minute, 0 (blocked) to a billion. */
export function checkQuota (quota: number | null | undefined): void {
  if (quota !== undefined && quota !== null && (!Number.isInteger(quota) || quota < QUOTA.minimum || quota > QUOTA.maximum)) throw new RegistrationError(`quota per minute must be a whole number from ${QUOTA.minimum} to ${QUOTA.maximum}`)
}
/** A public client may register private-use schemes (a native app, RFC 8252 §7.1). */
export function checkRedirectUris (uris: string[], isPublic: boolean): void {
  if (uris.length === 0) throw new RegistrationError('at least one redirect URI is required')
  if (uris.length > REDIRECT_URIS.maxItems) throw new RegistrationError(`at most ${REDIRECT_URIS.maxItems} redirect URIs`)
  for (const uri of uris) {
    const problem = registrationProblem(uri, { privateUse: isPublic })
    if (problem !== undefined) throw new RegistrationError(`redirect URI ${uri} ${problem}`)
  }
}

/** The allowed origins' bounds and form, as at registration (the developer console checks them so too). */
export function checkAllowedOrigins (origins: string[]): void {
  if (origins.length > ALLOWED_ORIGINS.maxItems) throw new RegistrationError(`at most ${ALLOWED_ORIGINS.maxItems} allowed origins`)
  for (const origin of origins) {
    const problem = originProblem(origin)
    if (problem !== undefined) throw new RegistrationError(`allowed origin ${origin} ${problem}`)
  }
}

/**
 * The response types, once each. A confidential client requiring PKCE gets only the code grant
 * (the implicit grant has no PKCE); a public client requires PKCE for codes and gets the implicit
 * grant only when it asks for it (RFC 9700 §2.1.2 discourages it; the spec offers it to apps
 * without a server).
 */
export function checkResponseTypes (types: string[], requirePkce: boolean, isPublic: boolean): ResponseType[] {
  const unique = [...new Set(types)]
  if (unique.length === 0 || unique.some((type) => type !== 'code' && type !== 'token')) {
    throw new RegistrationError('response types must be code, token or both')
  }
  checkImplicit(unique as ResponseType[], requirePkce, isPublic)
  return unique as ResponseType[]
}

function checkImplicit (responseTypes: ResponseType[], requirePkce: boolean, isPublic: boolean): void {
  if (requirePkce && !isPublic && responseTypes.includes('token')) {
    throw new RegistrationError('a client requiring PKCE cannot use response type token (the implicit grant has no PKCE)')
  }
}

/**
 * The grant types asked for (RFC names) and the response types they allow; response types given
 * beside them must be those. A device-only client has no response type.
 */
export function checkGrantTypes (types: string[], responseTypes: string[] | undefined, requirePkce: boolean, isPublic: boolean): { grantTypes: GrantType[], responseTypes: ResponseType[] } {
  const normal = normalGrantTypes(types)
  if ('problem' in normal) throw new RegistrationError(normal.problem)
  const implied = responseTypesOf(normal.grantTypes)
  if (responseTypes !== undefined) {
    const given = new Set(responseTypes)
    if (given.size !== implied.length || implied.some((type) => !given.has(type))) {
      throw new RegistrationError(`response types ${[...given].join(',')} do not match grant types ${normal.grantTypes.join(',')} (authorization_code is code, implicit is token)`)
    }
  }
  checkImplicit(implied, requirePkce, isPublic)
  return { grantTypes: normal.grantTypes, responseTypes: implied }
}

export function withTheirGrantTypes (responseTypes: ResponseType[]): { grantTypes: GrantType[], responseTypes: ResponseType[] } {
  return { grantTypes: grantTypesOfResponseTypes(responseTypes), responseTypes }
}
