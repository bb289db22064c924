// What each request of a load run carries: a path of the mix, a token of the population, and a
// fresh nonce and signature from the client library, as a client app signs its calls.
import type { Request as AutocannonRequest } from 'autocannon'
import { signRequest } from '../../plugin/client/index.ts'
import type { SetupRequest } from './run.ts'

export interface Credentials {
  accessToken: string
  macKey: string
  /** The token response's mac_algorithm; default HmacSha1. */
  macAlgorithm?: string
}

/** Draws an index from 0 to n - 1. */
export type Picker = () => number

/** 0, 1, ..., n - 1, 0, 1, ...: every token in turn. */
export function roundRobin (n: number): Picker {
  let next = 0
  return () => {
    const index = next
    next = next + 1 === n ? 0 : next + 1
    return index
  }
}

/**
 * Draws index k with a probability proportional to weights[k]. The cumulative weights are summed
 * once; each draw is a binary search of a uniform number.
 */
export function weighted (weights: readonly number[]): Picker {
  const cumulative = new Float64Array(weights.length)
  let total = 0
  weights.forEach((weight, k) => {
    total += weight
    cumulative[k] = total
  })
  const last = weights.length - 1
  return () => {
    const target = Math.random() * total
    let low = 0
    let high = last
    while (low < high) {
      const middle = (low + high) >>> 1
      if (cumulative[middle]! <= target) low = middle + 1
      else high = middle
    }
    return low
  }
}

/**
 * Draws indexes 0 to n - 1 by a Zipf law (s = 1): index k with a weight 1 / (k + 1), so index 0 is
 * the hottest: a few tokens busy, most rare, as a real population calls.
 */
export function zipf (n: number): Picker {
  return weighted(Array.from({ length: n }, (_, k) => 1 / (k + 1)))
}

export interface SignedRequestOptions {
  /** scheme://host:port, as the requests go out (the host is signed without its port). */
  origin: string
  method?: string
  /** The path and query of each request. */
  path: () => string
  credentials: readonly Credentials[]
  /** Which token signs the next request. */
  pick: Picker
  /** Told which token signed each request. */
  onSigned?: (index: number) => void
}

/** Each request signed afresh by signRequest: a new nonce, the token drawn by `pick`. */
export function signedRequests ({ origin, method = 'GET', path, credentials, pick, onSigned }: SignedRequestOptions): SetupRequest {
  return (request) => {
    const target = path()
    const index = pick()
    const { accessToken, macKey, macAlgorithm } = credentials[index]!
    onSigned?.(index)
    request.method = method as AutocannonRequest['method']
    request.path = target
    request.headers = { ...request.headers, authorization: signRequest({ method, url: origin + target, accessToken, macKey, ...(macAlgorithm !== undefined && { macAlgorithm }) }) }
    return request
  }
}

/** One token, one path, GET: the benchmark's signed request. */
export function signed (origin: string, path: string, credentials: Credentials): SetupRequest {
  return signedRequests({ origin, path: () => path, credentials: [credentials], pick: () => 0 })
}
