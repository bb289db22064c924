// What browsers get as `macgate/client` (the package's "browser" condition, or
// `macgate/client/browser` by name): signing on Web Crypto, which is asynchronous, and the sign-in
// helpers of an app without a server. No Node built-in is reachable from here (test/client-bundle).
export { explainSignature, type SignRequestOptions, type SignedFetchOptions, type SignedFetch } from './request-signature.ts'
export { computeMacAsync, signRequestAsync, createWebSignedFetch, createWebSignedFetch as createSignedFetch, makeNonce } from './web-sign.ts'
export {
  beginAuthorization,
  completeAuthorization,
  refreshTokens,
  revokeToken,
  AuthorizationError,
  RevocationError,
  type PublicClient,
  type AuthorizationStorage,
  type AuthorizationRefusal,
  type BeginAuthorizationOptions,
  type CompleteAuthorizationOptions,
  type RefreshOptions,
  type RevokeOptions
} from './authorization.ts'
export {
  parseTokenResponse,
  parseImplicitFragment,
  TokenEndpointError,
  type TokenResponse,
  type ImplicitGrant
} from './token-response.ts'
export { canonicalQuery, stringToSign } from '../mac/string-to-sign.ts'
