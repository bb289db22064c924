// What client apps import as `macgate/client`: request signing and token response parsing.
export { explainSignature, signRequest, createSignedFetch, type SignRequestOptions, type SignedFetchOptions, type SignedFetch } from './sign.js'
export {
  parseTokenResponse,
  parseImplicitFragment,
  TokenEndpointError,
  type TokenResponse,
  type ImplicitGrant
} from './token-response.js'
export { canonicalQuery, computeMac, makeNonce, stringToSign } from '../mac/signature.js'
