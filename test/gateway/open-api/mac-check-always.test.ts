// No option of the public API leaves the MAC check out (issue 33): `buildGateway` with every option
// it accepts, and with the benchmark's old `hotPath` switches, answers an unsigned request with the
// contract's refusal; the package's entry exports no way to build the gateway otherwise (the
// ladder's stand-ins, bench/ladder-gateway.ts, reach gateway/assembly/ past it).
import { Writable } from 'node:stream'
import t from 'tap'
import * as entry from '../../../gateway/index.ts'
import { buildGateway, type GatewayOptions } from '../../../gateway/index.ts'
import { MemoryStore } from '../../../plugin/index.ts'
import { API_HOST, openApiError, recordingUpstream } from '../../helpers/gateway.ts'

const ROUTES = [{ path: '/api/*', methods: ['GET'], scopes: ['1'], match: 'all' as const }]

t.test('every option buildGateway takes, and the old switches, still check every request', async (t) => {
  const upstream = await recordingUpstream(t)
  const store = new MemoryStore()
  t.teardown(async () => await store.close())
  // Required<>: an option added to GatewayOptions must be added here too. TLS and tracing need
  // certificates and an SDK (their tests build them), and decide nothing about a request's check.
  const options: Required<Omit<GatewayOptions, 'tls' | 'tracing'>> = {
    store,
    config: { upstream: upstream.url, routes: ROUTES, cors: true, trustProxy: ['127.0.0.1'], issuer: 'https://id.example' },
    secret: 'a-secret-of-at-least-thirty-two-characters',
    logger: { level: 'info', stream: new Writable({ write (_chunk, _encoding, done) { done() } }) },
    demo: { clientId: 'demo', clientSecret: 'demo-secret', redirectUri: 'https://demo.example/callback' },
    clock: Date.now,
    trustedPeer: () => true
  }
  const switches = { macCheck: false, upstreamHeaders: false, requestMetrics: false }
  // @ts-expect-error hotPath is no option of buildGateway: the ladder's parts are not the public API's.
  const app = await buildGateway({ ...options, hotPath: switches, parts: switches })
  t.teardown(async () => await app.close())
  const unsigned = await app.inject({ url: '/api/profile', headers: { host: API_HOST, origin: 'https://elsewhere.example' } })
  t.equal(unsigned.statusCode, 401)
  t.same(unsigned.json(), openApiError(96002, 'MAC Authorization header is missing'))
  const forged = await app.inject({ url: '/api/profile', headers: { host: API_HOST, authorization: 'MAC access_token="x", nonce="1:1", mac="m"' } })
  t.equal(forged.statusCode, 401, 'a forged header is refused too')
  t.equal(upstream.requests.length, 0, 'nothing reached the upstream')
})

t.test('the package entry exports no other way to build the gateway', async (t) => {
  for (const name of ['assembleGateway', 'SHIPPED_PARTS', 'SHIPPED_PROXY_PARTS', 'registerProxy', 'rungParts']) {
    t.notOk(name in entry, `macgate/gateway has no ${name}`)
  }
})
