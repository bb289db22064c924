/**
 * The grants a client may use, by their RFC names (RFC 7591 §2 `grant_types`), and how they tie to
 * response types. A client's grant types decide what the token endpoints serve it; its response
 * types (what the authorization endpoint serves) follow from them: `authorization_code` is the
 * `code` response type, `implicit` the `token` one; the others have none.
 *
 * `authorization_code` and the device grant always bring `refresh_token`: their answer carries a
 * refresh token (the contract's eight fields), which the client must be able to redeem. A
 * `refresh_token` alone, with no grant that issues one, is refused.
 */

/** RFC 8628 §3.4's grant type: a device redeems its device code. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'implicit', DEVICE_CODE_GRANT] as const

export type GrantType = typeof GRANT_TYPES[number]

export type ResponseType = 'code' | 'token'

/** The operator's short names (`--grant-types code,implicit,device`) and the grants each stands for. */
export const GRANT_SHORT_NAMES: Readonly<Record<string, readonly GrantType[]>> = {
  code: ['authorization_code', 'refresh_token'],
  implicit: ['implicit'],
  device: [DEVICE_CODE_GRANT, 'refresh_token']
}

/** The grants that issue a refresh token. */
const ISSUES_REFRESH: readonly GrantType[] = ['authorization_code', DEVICE_CODE_GRANT]

/** A grant type's place in `GRANT_TYPES`, so that every list is kept in one order. */
function byOrder (a: GrantType, b: GrantType): number {
  return GRANT_TYPES.indexOf(a) - GRANT_TYPES.indexOf(b)
}

export function isGrantType (value: string): value is GrantType {
  return (GRANT_TYPES as readonly string[]).includes(value)
}

/**
 * The grant types as kept: once each, in one order, with `refresh_token` added where a grant
 * issues refresh tokens. Undefined with a reason when they cannot be a client's: an unknown name,
 * none at all, or a refresh token with nothing issuing one.
 */
export function normalGrantTypes (types: readonly string[]): { grantTypes: GrantType[] } | { problem: string } {
  const unknown = types.find((type) => !isGrantType(type))
  if (unknown !== undefined) return { problem: `grant type ${unknown} is not one of ${GRANT_TYPES.join(', ')}` }
  const set = new Set(types as GrantType[])
  if (ISSUES_REFRESH.some((type) => set.has(type))) set.add('refresh_token')
  else if (set.has('refresh_token')) return { problem: 'grant type refresh_token needs a grant that issues refresh tokens (authorization_code or the device grant)' }
  if (set.size === 0) return { problem: 'at least one grant type is required' }
  return { grantTypes: [...set].sort(byOrder) }
}

/** Short names (`code,implicit,device`) as grant types; undefined with a reason for an unknown name. */
export function grantTypesOfShortNames (names: readonly string[]): { grantTypes: GrantType[] } | { problem: string } {
  const unknown = names.find((name) => !Object.hasOwn(GRANT_SHORT_NAMES, name))
  if (unknown !== undefined) return { problem: `grant type ${unknown} is not one of ${Object.keys(GRANT_SHORT_NAMES).join(', ')}` }
  return normalGrantTypes(names.flatMap((name) => GRANT_SHORT_NAMES[name]!))
}

/** Grant types as the short names that stand for them (for the CLI's listing). */
export function shortNamesOf (grantTypes: readonly GrantType[]): string[] {
  return Object.entries(GRANT_SHORT_NAMES).filter(([, types]) => grantTypes.includes(types[0]!)).map(([name]) => name)
}

/** The response types the grant types allow at the authorization endpoint. */
export function responseTypesOf (grantTypes: readonly GrantType[]): ResponseType[] {
  return [
    ...grantTypes.includes('authorization_code') ? ['code' as const] : [],
    ...grantTypes.includes('implicit') ? ['token' as const] : []
  ]
}

/**
 * The grant types of a client registered before clients had them: what its response types let
 * it do then (the code grant and its refreshes, the implicit grant).
 */
export function grantTypesOfResponseTypes (responseTypes: readonly ResponseType[]): GrantType[] {
  return [
    ...responseTypes.includes('code') ? ['authorization_code' as const, 'refresh_token' as const] : [],
    ...responseTypes.includes('token') ? ['implicit' as const] : []
  ]
}

/**
 * New response types for a client: its redirect grants follow them, the grants without a redirect
 * (the device grant) stay.
 */
export function grantTypesWithResponseTypes (grantTypes: readonly GrantType[], responseTypes: readonly ResponseType[]): GrantType[] {
  const kept = grantTypes.filter((type) => type === DEVICE_CODE_GRANT)
  const refresh: GrantType[] = kept.length > 0 ? ['refresh_token'] : []
  return [...new Set([...kept, ...refresh, ...grantTypesOfResponseTypes(responseTypes)])].sort(byOrder)
}
