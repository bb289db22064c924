// What client apps import as `macgate/client` in Node: request signing (synchronous on node:crypto,
// or on Web Crypto as in a browser) and token response parsing. Browsers get browser.ts instead.
export { explainSignature, signRequest, createSignedFetch, type SignRequestOptions, type SignedFetchOptions, type SignedFetch } from './sign.js'
export { computeMacAsync, signRequestAsync, createWebSignedFetch } from './web-sign.js'
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
} from './authorization.js'
export {
  parseTokenResponse,
  parseImplicitFragment,
  TokenEndpointError,
  type TokenResponse,
  type ImplicitGrant
} from './token-response.js'
export { canonicalQuery, computeMac, makeNonce, stringToSign } from '../mac/signature.js'
