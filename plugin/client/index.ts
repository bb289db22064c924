// What client apps import as `macgate/client` in Node: everything a browser gets (browser.ts: the
// sign-in of an app without a server, token response parsing, signing on Web Crypto), with
// synchronous signing on node:crypto under the names where the two differ (`createSignedFetch`,
// `makeNonce`): an export named here wins over the one of the same name from browser.ts.
export * from './browser.ts'
export { explainSignature, signRequest, createSignedFetch, type SignRequestOptions, type SignedFetchOptions, type SignedFetch } from './sign.ts'
export { canonicalQuery, computeMac, makeNonce, stringToSign } from '../mac/signature.ts'
