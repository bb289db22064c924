import type { RegistrationPolicy } from '../config/options.ts'
import { normalGrantTypes, responseTypesOf, type GrantType, type ResponseType } from '../access/grant-types.ts'
import { parseScope } from '../access/scope.ts'
import { registrationProblem } from '../oauth/redirect-uri.ts'
import type { ClientRecord, SelfRegistration } from '../store/store.ts'

/** RFC 7591 §3.2.2's errors, each a 400 with `{"error","error_description"}`. */
export class ClientMetadataError extends Error {
  readonly code: 'invalid_redirect_uri' | 'invalid_client_metadata' | 'invalid_software_statement'

  constructor (code: ClientMetadataError['code'], message: string) {
    super(message)
    this.name = 'ClientMetadataError'
    this.code = code
  }
}

type AuthMethod = SelfRegistration['tokenEndpointAuthMethod']
const AUTH_METHODS: readonly AuthMethod[] = ['client_secret_basic', 'client_secret_post', 'none']

/** The client metadata a registration asked for, checked against the deployment's bounds. */
export interface ClientMetadata {
  name: string
  redirectUris: string[]
  /** `token_endpoint_auth_method: none`: a public client (no secret, PKCE). */
  isPublic: boolean
  tokenEndpointAuthMethod: AuthMethod
  grantTypes: GrantType[]
  responseTypes: ResponseType[]
  scopes: string[]
  clientUri?: string
  logoUri?: string
  contacts?: string[]
  softwareId?: string
  softwareVersion?: string
}

const MAX_REDIRECT_URIS = 20
const MAX_URI = 2048
const MAX_NAME = 100
const MAX_CONTACTS = 10
const MAX_TEXT = 255
/** Loopback and private-use redirect URIs are a native app's (RFC 8252 §7.1, §7.3). */
const NATIVE_REDIRECT = /^(http:\/\/(127\.0\.0\.1|\[::1\]|localhost)[:/]|[a-z][a-z0-9-]*\.[a-z0-9.-]+:\/)/i

const invalid = (message: string): ClientMetadataError => new ClientMetadataError('invalid_client_metadata', message)

function optionalText (body: Record<string, unknown>, field: string, max = MAX_TEXT): string | undefined {
  const value = body[field]
  if (value === undefined) return undefined
  if (typeof value !== 'string' || value.trim() === '' || value.length > max) throw invalid(`${field} must be a string of 1 to ${max} characters`)
  return value
}

/** A web page or image of the client's: https (http only on a loopback host, for development). */
function optionalUri (body: Record<string, unknown>, field: string): string | undefined {
  const value = optionalText(body, field, MAX_URI)
  if (value === undefined) return undefined
  const url = URL.canParse(value) ? new URL(value) : undefined
  if (url === undefined || (url.protocol !== 'https:' && !(url.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname)))) {
    throw invalid(`${field} must be an https URL`)
  }
  return value
}

function stringList (value: unknown, field: string, max: number): string[] {
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw invalid(`${field} must be an array of strings`)
  if (value.length > max) throw invalid(`${field} may list at most ${max}`)
  return [...new Set(value as string[])]
}

function grantsOf (body: Record<string, unknown>, policy: RegistrationPolicy): { grantTypes: GrantType[], responseTypes: ResponseType[] } {
  const asked = body.grant_types === undefined ? ['authorization_code'] : stringList(body.grant_types, 'grant_types', 10)
  const normal = normalGrantTypes(asked)
  if ('problem' in normal) throw invalid(normal.problem)
  const refused = normal.grantTypes.find((type) => !policy.grantTypes.includes(type))
  if (refused !== undefined) throw invalid(`grant type ${refused} is not offered to registered clients here (offered: ${policy.grantTypes.join(', ')})`)
  const implied = responseTypesOf(normal.grantTypes)
  if (body.response_types !== undefined) {
    // RFC 7591 §2.1: the two must agree (code is authorization_code, token is implicit).
    const given = stringList(body.response_types, 'response_types', 5)
    if (given.length !== implied.length || implied.some((type) => !given.includes(type))) {
      throw invalid(`response_types ${given.join(' ')} do not agree with grant_types ${normal.grantTypes.join(' ')} (code is authorization_code, token is implicit)`)
    }
  }
  return { grantTypes: normal.grantTypes, responseTypes: implied }
}

function redirectUrisOf (body: Record<string, unknown>, isPublic: boolean): string[] {
  if (body.redirect_uris === undefined) throw new ClientMetadataError('invalid_redirect_uri', 'redirect_uris is required')
  if (!Array.isArray(body.redirect_uris) || body.redirect_uris.some((uri) => typeof uri !== 'string' || uri.length > MAX_URI)) {
    throw new ClientMetadataError('invalid_redirect_uri', `redirect_uris must be an array of URIs of at most ${MAX_URI} characters`)
  }
  const uris = [...new Set(body.redirect_uris as string[])]
  if (uris.length === 0 || uris.length > MAX_REDIRECT_URIS) throw new ClientMetadataError('invalid_redirect_uri', `redirect_uris must list 1 to ${MAX_REDIRECT_URIS} URIs`)
  for (const uri of uris) {
    const problem = registrationProblem(uri, { privateUse: isPublic })
    if (problem !== undefined) throw new ClientMetadataError('invalid_redirect_uri', `redirect URI ${uri} ${problem}`)
  }
  return uris
}

function scopesOf (body: Record<string, unknown>, policy: RegistrationPolicy): string[] {
  if (body.scope === undefined) return policy.scopes
  if (typeof body.scope !== 'string') throw invalid('scope must be a string of space-separated scopes')
  const scopes = parseScope(body.scope)
  if (scopes.length === 0) throw invalid('scope is empty')
  const refused = scopes.find((scope) => !policy.scopes.includes(scope))
  if (refused !== undefined) throw invalid(`scope ${refused} may not be registered here (allowed: ${policy.scopes.join(' ')})`)
  return scopes
}

/**
 * Reads a registration's client metadata (RFC 7591 §2), in the order a developer would fix it:
 * a software statement is refused (none is trusted here), then the client's type, its grants
 * (within the deployment's `grantTypes`), its redirect URIs (`invalid_redirect_uri`), its scope
 * (within the deployment's `scopes`), then the descriptive fields. Fields not defined here are
 * ignored (§2). A native app (a public client on loopback or private-use redirect URIs) is never
 * given the implicit grant (RFC 8252 §8.2).
 */
export function readClientMetadata (body: unknown, policy: RegistrationPolicy): ClientMetadata {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('the body must be a JSON object of client metadata')
  const fields = body as Record<string, unknown>
  if (fields.software_statement !== undefined) throw new ClientMetadataError('invalid_software_statement', 'software statements are not accepted here')
  const method = fields.token_endpoint_auth_method ?? 'client_secret_basic'
  if (!AUTH_METHODS.includes(method as AuthMethod)) throw invalid(`token_endpoint_auth_method must be one of ${AUTH_METHODS.join(', ')}`)
  const isPublic = method === 'none'
  const { grantTypes, responseTypes } = grantsOf(fields, policy)
  const redirectUris = redirectUrisOf(fields, isPublic)
  if (isPublic && grantTypes.includes('implicit') && redirectUris.some((uri) => NATIVE_REDIRECT.test(uri))) {
    throw invalid('a native app (loopback or private-use redirect URIs) may not use the implicit grant (RFC 8252 §8.2): use the code grant with PKCE')
  }
  const scopes = scopesOf(fields, policy)
  const name = optionalText(fields, 'client_name', MAX_NAME)?.trim() ?? 'Unnamed app'
  const contacts = fields.contacts === undefined ? undefined : stringList(fields.contacts, 'contacts', MAX_CONTACTS)
  if (contacts?.some((contact) => contact === '' || contact.length > 320)) throw invalid('contacts must be 1 to 320 characters each')
  const clientUri = optionalUri(fields, 'client_uri')
  const logoUri = optionalUri(fields, 'logo_uri')
  const softwareId = optionalText(fields, 'software_id')
  const softwareVersion = optionalText(fields, 'software_version')
  return {
    name,
    redirectUris,
    isPublic,
    tokenEndpointAuthMethod: method as AuthMethod,
    grantTypes,
    responseTypes,
    scopes,
    ...(clientUri !== undefined && { clientUri }),
    ...(logoUri !== undefined && { logoUri }),
    ...(contacts !== undefined && { contacts }),
    ...(softwareId !== undefined && { softwareId }),
    ...(softwareVersion !== undefined && { softwareVersion })
  }
}

/** The metadata macgate keeps on the client's `selfRegistration` (beside the fields of its own). */
export function selfRegistrationOf (metadata: ClientMetadata, { via, initialTokenId, accessTokenHash }: Pick<SelfRegistration, 'via' | 'initialTokenId' | 'accessTokenHash'>): SelfRegistration {
  const { clientUri, logoUri, contacts, softwareId, softwareVersion } = metadata
  return {
    via,
    ...(initialTokenId !== undefined && { initialTokenId }),
    ...(accessTokenHash !== undefined && { accessTokenHash }),
    tokenEndpointAuthMethod: metadata.tokenEndpointAuthMethod,
    ...(clientUri !== undefined && { clientUri }),
    ...(logoUri !== undefined && { logoUri }),
    ...(contacts !== undefined && { contacts }),
    ...(softwareId !== undefined && { softwareId }),
    ...(softwareVersion !== undefined && { softwareVersion })
  }
}

/** A self-registered client's metadata as RFC 7591 §3.2.1 answers it (no secret, no token). */
export function metadataView (client: ClientRecord, registration: SelfRegistration): Record<string, unknown> {
  return {
    client_id: client.id,
    client_id_issued_at: Math.floor(client.createdAt / 1000),
    client_name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: client.grantTypes,
    response_types: client.responseTypes,
    token_endpoint_auth_method: registration.tokenEndpointAuthMethod,
    scope: client.scopes.join(' '),
    ...(registration.clientUri !== undefined && { client_uri: registration.clientUri }),
    ...(registration.logoUri !== undefined && { logo_uri: registration.logoUri }),
    ...(registration.contacts !== undefined && { contacts: registration.contacts }),
    ...(registration.softwareId !== undefined && { software_id: registration.softwareId }),
    ...(registration.softwareVersion !== undefined && { software_version: registration.softwareVersion })
  }
}
