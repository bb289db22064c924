import { errors, type OAuthError } from '../http/errors.ts'
import type { MacgateContext } from '../config/options.ts'
import type { ClientRecord } from '../store/store.ts'
import { single, type Params } from '../http/params.ts'
import { matchRedirectUri } from './redirect-uri.ts'
import { parseScope } from '../access/scope.ts'
import { isClientId } from '../access/credentials.ts'

export interface AuthorizationRequest {
  client: ClientRecord
  /** The request's own redirect_uri, where the answer goes. */
  redirectUri: string
  /** The registered URI it matched, which the code remembers. */
  registeredUri: string
  responseType: 'code' | 'token'
  scope: string[]
  state?: string
  skipConfirm: boolean
  codeChallenge?: string
}

/** A failure that must not redirect (unknown client, bad redirect_uri): shown on a page. */
export class NoRedirectError extends Error {
  readonly error: OAuthError

  constructor (error: OAuthError) {
    super(error.message)
    this.error = error
  }
}

/** A failure sent back to the client's redirect_uri. */
export class RedirectError extends Error {
  readonly error: OAuthError
  readonly redirectUri: string
  readonly state: string | undefined

  constructor (error: OAuthError, redirectUri: string, state: string | undefined) {
    super(error.message)
    this.error = error
    this.redirectUri = redirectUri
    this.state = state
  }
}

const MAX_STATE = 2048
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/

/** The sync checks of the no-redirect step: a protocol error here must not redirect. */
function noRedirect<T> (check: () => T): T {
  try {
    return check()
  } catch (error) {
    throw new NoRedirectError(error as OAuthError)
  }
}

/** Step 1 of contract §3. A store outage is not wrapped: it is the service's fault, a 503. */
async function identifyClient (config: MacgateContext, query: Params): Promise<{ client: ClientRecord, redirectUri: string, registeredUri: string }> {
  const clientId = noRedirect(() => single(query, 'client_id'))
  if (clientId === undefined || !isClientId(clientId)) throw new NoRedirectError(errors.invalidRequest('client_id missing or malformed'))
  const client = await config.store.getClient(clientId)
  if (client === undefined) throw new NoRedirectError(errors.clientNotExists())
  const redirectUri = noRedirect(() => single(query, 'redirect_uri'))
  const registeredUri = redirectUri === undefined ? undefined : matchRedirectUri(client.redirectUris, redirectUri, config.strictRedirectUri)
  if (redirectUri === undefined || registeredUri === undefined) throw new NoRedirectError(errors.invalidRedirectUri())
  return { client, redirectUri, registeredUri }
}

function readResponseType (client: ClientRecord, query: Params): 'code' | 'token' {
  const responseType = single(query, 'response_type')
  if (responseType === undefined || responseType === '') throw errors.invalidRequest('response_type is missing')
  if (responseType !== 'code' && responseType !== 'token') throw errors.unsupportedResponseType()
  if (!client.responseTypes.includes(responseType)) throw errors.unauthorizedClient()
  // The implicit grant has no PKCE: a confidential client registered as requiring it may not use it
  // at all; a public client requires it for codes and was registered for tokens explicitly.
  if (responseType === 'token' && client.requirePkce && client.public !== true) throw errors.unauthorizedClient('this client requires PKCE, which the implicit grant cannot use')
  return responseType
}

function readSkipConfirm (query: Params): boolean {
  const skipConfirm = single(query, 'skip_confirm')?.toLowerCase()
  if (skipConfirm !== undefined && skipConfirm !== 'true' && skipConfirm !== 'false') {
    throw errors.invalidRequest('skip_confirm must be true or false')
  }
  return skipConfirm === 'true'
}

function readCodeChallenge (client: ClientRecord, query: Params, responseType: string): string | undefined {
  const challenge = single(query, 'code_challenge')
  const method = single(query, 'code_challenge_method')
  if (challenge === undefined && method === undefined) {
    if (client.requirePkce && responseType === 'code') throw errors.invalidRequest('code_challenge is required')
    return undefined
  }
  if (method !== 'S256') throw errors.invalidRequest('code_challenge_method must be S256')
  if (challenge === undefined || !CODE_CHALLENGE.test(challenge)) throw errors.invalidRequest('code_challenge malformed')
  return challenge
}

function readScope (config: MacgateContext, client: ClientRecord, query: Params): string[] {
  const requested = parseScope(single(query, 'scope') ?? '')
  return config.registry.check(requested.length === 0 ? client.scopes : requested, client.scopes)
}

/** Checks an authorization request in the contract's order (section 3). */
export async function readAuthorizationRequest (config: MacgateContext, query: Params): Promise<AuthorizationRequest> {
  const { client, redirectUri, registeredUri } = await identifyClient(config, query)
  // Echo state only when it is one well-formed value.
  const rawState = query.state
  const state = typeof rawState === 'string' && rawState.length <= MAX_STATE ? rawState : undefined
  try {
    const responseType = readResponseType(client, query)
    const twice = Object.keys(query).find((name) => Array.isArray(query[name]))
    if (twice !== undefined) throw errors.invalidRequest(`${twice} is repeated`)
    const skipConfirm = readSkipConfirm(query)
    if (typeof rawState === 'string' && state === undefined) throw errors.invalidRequest('state is too long')
    const scope = readScope(config, client, query)
    const codeChallenge = readCodeChallenge(client, query, responseType)
    return { client, redirectUri, registeredUri, responseType, scope, state, skipConfirm, codeChallenge }
  } catch (error) {
    throw new RedirectError(error as OAuthError, redirectUri, state)
  }
}
