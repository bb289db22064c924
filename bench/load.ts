import { randomBytes } from 'node:crypto'
import autocannon, { type Request as AutocannonRequest } from 'autocannon'
import { signRequest } from '../plugin/client/index.js'

export interface LoadOptions {
  url: string
  seconds: number
  connections: number
  /** A fixed offered rate (requests per second over all connections) instead of the maximum. */
  rate?: number
  /** Stop after this many requests instead of after `seconds`. */
  amount?: number
  /** Called for every request: a fresh signature and nonce each time. */
  setupRequest?: (request: AutocannonRequest) => AutocannonRequest
}

export interface LoadResult {
  requests: number
  rps: number
  p50: number
  p99: number
  errors: number
  non2xx: number
}

function percentile (sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!
}

/**
 * One autocannon run. Latencies come from every response's own timing (sub-millisecond), since
 * autocannon's histogram keeps whole milliseconds, too coarse for a check that adds microseconds.
 */
export async function runLoad ({ url, seconds, connections, rate, amount, setupRequest }: LoadOptions): Promise<LoadResult> {
  const times: number[] = []
  const started = performance.now()
  const instance = autocannon({
    url,
    duration: seconds,
    connections,
    pipelining: 1,
    ...(rate !== undefined && { overallRate: rate }),
    ...(amount !== undefined && { amount }),
    ...(setupRequest !== undefined && { requests: [{ setupRequest }] })
  })
  // Without a callback autocannon returns its event emitter, made thenable.
  const events = instance as unknown as NodeJS.EventEmitter
  events.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => { times.push(responseTime) })
  const result = await instance
  // autocannon reports whole seconds: too coarse for a run of a fixed number of requests.
  const elapsedSeconds = (performance.now() - started) / 1000
  const sorted = Float64Array.from(times).sort()
  return {
    requests: result.requests.total,
    rps: result.requests.total / elapsedSeconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx
  }
}

export interface Credentials {
  accessToken: string
  macKey: string
}

/** Each request signed afresh, as a client app signs it. */
export function signed (base: string, path: string, { accessToken, macKey }: Credentials) {
  return (request: AutocannonRequest): AutocannonRequest => {
    request.headers = { ...request.headers, authorization: signRequest({ method: 'GET', url: base + path, accessToken, macKey }) }
    return request
  }
}

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

/**
 * Draws indexes 0 to n - 1 by a Zipf law (s = 1): index k with a weight 1 / (k + 1), so index 0 is
 * the hottest. The cumulative weights are summed once; each draw is a binary search of a uniform number.
 */
export function zipf (n: number): () => number {
  const cumulative = new Float64Array(n)
  let total = 0
  for (let k = 0; k < n; k++) {
    total += 1 / (k + 1)
    cumulative[k] = total
  }
  return () => {
    const target = Math.random() * total
    let low = 0
    let high = n - 1
    while (low < high) {
      const middle = (low + high) >>> 1
      if (cumulative[middle]! < target) low = middle + 1
      else high = middle
    }
    return low
  }
}

/** Each request signed afresh with a token of the population, drawn by a Zipf law: a few hot, most rare. */
export function zipfSigned (base: string, path: string, population: Credentials[]) {
  const draw = zipf(population.length)
  return (request: AutocannonRequest): AutocannonRequest => signed(base, path, population[draw()]!)(request)
}
