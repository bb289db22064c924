// The sign-in of an app without a server (contract section 11), for both grants: the code grant
// with PKCE as a public client, and the implicit grant. What the app keeps between leaving for the
// authorize page and coming back lives in the tab's sessionStorage; the tokens are returned.
import { randomText, base64url } from './base64.ts'
import { parseImplicitFragment, parseTokenResponse, TokenEndpointError, type TokenResponse } from './token-response.ts'

/** A public client (no secret) as registered at the gateway. */
export interface PublicClient {
  /** The gateway's base URL, e.g. `https://auth.example.com`; its endpoints live under `oauth2/`. */
  server: string
  clientId: string
  /** The registered redirect URI this app's page is at. */
  redirectUri: string
}

/** What keeps the pending authorization across the redirect: `sessionStorage` in a browser. */
export interface AuthorizationStorage {
  getItem: (key: string) => string | null
  setItem: (key: string, value: string) => void
  removeItem: (key: string) => void
}

/** Why completeAuthorization refused what came back (an error from the server is a TokenEndpointError). */
export type AuthorizationRefusal = 'not-started' | 'state-mismatch' | 'no-code'

export class AuthorizationError extends Error {
  readonly reason: AuthorizationRefusal

  constructor (reason: AuthorizationRefusal, message: string) {
    super(message)
    this.name = 'AuthorizationError'
    this.reason = reason
  }
}

/** An RFC 7009 refusal at the revocation endpoint: its string error code and the HTTP status. */
export class RevocationError extends Error {
  readonly error: string
  readonly status: number

  constructor (error: string, status: number) {
    super(`revocation refused (${status}): ${error}`)
    this.name = 'RevocationError'
    this.error = error
    this.status = status
  }
}

type Pending = PublicClient & { state: string } & ({ responseType: 'code', verifier: string } | { responseType: 'token' })

// One pending authorization per tab (sessionStorage is per tab): a new one replaces the last.
const KEY = 'macgate.authorization'

interface Browser {
  sessionStorage?: AuthorizationStorage
  location?: { href: string }
}

function defaultStorage (): AuthorizationStorage {
  const storage = (globalThis as Browser).sessionStorage
  if (storage === undefined) throw new TypeError('no sessionStorage here: pass the storage option')
  return storage
}

function endpoint (server: string, name: string): string {
  return new URL(`oauth2/${name}`, server.endsWith('/') ? server : `${server}/`).toString()
}

async function challengeOf (verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))))
}

export interface BeginAuthorizationOptions extends PublicClient {
  /** `code` (default): the code grant with PKCE S256 (RFC 9700). `token`: the implicit grant. */
  responseType?: 'code' | 'token'
  scope?: string
  /** More authorize parameters, e.g. `{ skip_confirm: 'true' }`. */
  parameters?: Record<string, string>
  storage?: AuthorizationStorage
}

/**
 * The authorize URL to send the browser to. A fresh state (and for the code grant a PKCE verifier)
 * is kept in storage for completeAuthorization; only the state and the challenge leave the page.
 */
export async function beginAuthorization ({ responseType = 'code', scope, parameters = {}, storage = defaultStorage(), ...client }: BeginAuthorizationOptions): Promise<string> {
  const { server, clientId, redirectUri } = client
  const state = randomText(16)
  const pending: Pending = responseType === 'code' ? { server, clientId, redirectUri, state, responseType, verifier: randomText(32) } : { server, clientId, redirectUri, state, responseType }
  const query = new URLSearchParams({ ...parameters, client_id: clientId, redirect_uri: redirectUri, response_type: responseType, state })
  if (scope !== undefined) query.set('scope', scope)
  if (pending.responseType === 'code') {
    query.set('code_challenge', await challengeOf(pending.verifier))
    query.set('code_challenge_method', 'S256')
  }
  storage.setItem(KEY, JSON.stringify(pending))
  return `${endpoint(server, 'authorize')}?${query.toString()}`
}

export interface CompleteAuthorizationOptions {
  /** The URL the browser came back to; default: the page's own. */
  url?: string
  storage?: AuthorizationStorage
  fetch?: typeof globalThis.fetch
}

/**
 * Completes what beginAuthorization started, in this order: the pending authorization is taken
 * (once: a reload cannot replay it), the answer's state must be its state (else anyone could
 * send this page a token or code of their own), an error from the server is thrown with its code,
 * then the implicit grant's fragment is read, or the code is exchanged with the PKCE verifier.
 * Strip the code or fragment from the address bar afterwards (history.replaceState).
 */
export async function completeAuthorization ({ url = (globalThis as Browser).location?.href, storage = defaultStorage(), fetch = globalThis.fetch }: CompleteAuthorizationOptions = {}): Promise<TokenResponse> {
  if (url === undefined) throw new TypeError('no page URL here: pass the url option')
  const saved = storage.getItem(KEY)
  storage.removeItem(KEY)
  if (saved === null) throw new AuthorizationError('not-started', 'no authorization was started in this tab')
  const pending = JSON.parse(saved) as Pending
  const landed = new URL(url)
  // Errors come back in the query for both grants (contract section 3); tokens in the fragment.
  const answer = pending.responseType === 'code' || landed.searchParams.has('error') ? landed.searchParams : new URLSearchParams(landed.hash.slice(1))
  const states = answer.getAll('state')
  if (states.length !== 1 || states[0] !== pending.state) throw new AuthorizationError('state-mismatch', 'the answer\'s state is not the one this tab sent')
  const error = answer.get('error')
  if (error !== null) throw new TokenEndpointError(Number.isInteger(Number(error)) ? Number(error) : 0, answer.get('error_description') ?? error)

  if (pending.responseType === 'token') {
    const { state: _, ...tokens } = parseImplicitFragment(landed.hash.slice(1))
    return tokens
  }
  const codes = answer.getAll('code')
  if (codes.length !== 1 || codes[0] === '') throw new AuthorizationError('no-code', 'the answer carries no code')
  return await postToken(fetch, pending, {
    grant_type: 'authorization_code', code: codes[0] as string, code_verifier: pending.verifier
  })
}

async function postToken (fetch: typeof globalThis.fetch, client: PublicClient, parameters: Record<string, string>): Promise<TokenResponse> {
  const answer = await fetch(endpoint(client.server, 'token'), {
    method: 'POST',
    body: new URLSearchParams({ ...parameters, client_id: client.clientId, redirect_uri: client.redirectUri, token_type: 'mac' })
  })
  return parseTokenResponse(await answer.text())
}

export interface RefreshOptions extends PublicClient {
  refreshToken: string
  /** Narrows the grant (never widens it). */
  scope?: string
  fetch?: typeof globalThis.fetch
}

/** New tokens for a refresh token; the old one is spent (public clients' refresh tokens rotate). */
export async function refreshTokens ({ refreshToken, scope, fetch = globalThis.fetch, ...client }: RefreshOptions): Promise<TokenResponse> {
  return await postToken(fetch, client, { grant_type: 'refresh_token', refresh_token: refreshToken, ...(scope !== undefined && { scope }) })
}

export interface RevokeOptions extends Omit<PublicClient, 'redirectUri'> {
  /** The access or the refresh token: either revokes the whole grant. */
  token: string
  fetch?: typeof globalThis.fetch
}

/** RFC 7009 revocation by a public client, which names itself by client_id alone. */
export async function revokeToken ({ server, clientId, token, fetch = globalThis.fetch }: RevokeOptions): Promise<void> {
  const answer = await fetch(endpoint(server, 'revoke'), { method: 'POST', body: new URLSearchParams({ client_id: clientId, token }) })
  if (answer.ok) return
  const body = await answer.json().catch(() => ({})) as { error?: unknown }
  throw new RevocationError(typeof body.error === 'string' ? body.error : 'unknown', answer.status)
}
