import { randomBytes } from 'node:crypto'
import type { Request as AutocannonRequest } from 'autocannon'
import { signed, signedRequests, zipf, type Credentials } from '../gateway/index.ts'

// The load generator is the gateway's (`macgate load` runs the same): one autocannon run, measured.
export { runLoad, signed, type Credentials, type LoadOptions, type LoadResult } from '../gateway/index.ts'

/** A valid token with a wrong mac: the check must fail after the token lookup. */
export function badMac (base: string, path: string, credentials: Credentials) {
  const sign = signed(base, path, credentials)
  return (request: AutocannonRequest): AutocannonRequest => {
    const header = sign(request).headers!.authorization!
    request.headers = { ...request.headers, authorization: header.replace(/mac="[^"]{4}/, 'mac="AAAA') }
    return request
  }
}

/** A new random token every time, as a flood of garbage would send. */
export function unknownTokens (base: string, path: string) {
  return (request: AutocannonRequest): AutocannonRequest => {
    const token = `${randomBytes(12).toString('base64url')}.${randomBytes(43).toString('base64url').slice(0, 59)}`
    return signed(base, path, { accessToken: token, macKey: 'unknown-key-unknown-key-unk' })(request)
  }
}

/** Exchanges the next of the pre-made codes at the token endpoint. */
export function codeExchanges (client: { clientId: string, clientSecret: string, redirectUri: string }, codes: string[]) {
  let next = 0
  return (request: AutocannonRequest): AutocannonRequest => {
    const code = codes[next++ % codes.length]!
    request.path = `/oauth2/token?${new URLSearchParams({ client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: client.redirectUri, grant_type: 'authorization_code', code }).toString()}`
    return request
  }
}

/** Each request signed afresh with a token of the population, drawn by a Zipf law: a few hot, most rare. */
export function zipfSigned (base: string, path: string, population: Credentials[]) {
  return signedRequests({ origin: base, path: () => path, credentials: population, pick: zipf(population.length) })
}
