// What client apps import as `macgate/client` in Node: request signing (synchronous on node:crypto,
// or on Web Crypto as in a browser) and token response parsing. Browsers get browser.ts instead.
export { explainSignature, signRequest, createSignedFetch, type SignRequestOptions, type SignedFetchOptions, type SignedFetch } from './sign.ts'
export { computeMacAsync, signRequestAsync, createWebSignedFetch } from './web-sign.ts'
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
export { canonicalQuery, computeMac, makeNonce, stringToSign } from '../mac/signature.ts'
