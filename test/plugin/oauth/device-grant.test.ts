// The device grant (RFC 8628) over real HTTP on a real Redis, driven by a standard client library
// (panva's oauth4webapi: discovery, deviceAuthorizationRequest, deviceCodeGrantRequest and their
// process functions) as a TV app would; the user decides on the verification page. The gateways'
// clock is stepped (no sleeping for intervals or expiry). Then two instances on one Redis: started on
// one, approved on the other, polls judged alike by both, and two pollers racing for one approval.
import { randomBytes } from 'node:crypto'
import * as oauth from 'oauth4webapi'
import t from 'tap'
import { buildGateway } from '../../../gateway/index.ts'
import type { GatewayConfig } from '../../../gateway/config/gateway-config.ts'
import { createSignedFetch } from '../../../plugin/client/index.ts'
import { RedisStore } from '../../../plugin/store/redis/redis-store.ts'
import { addUser, InjectBrowser } from '../../helpers/app.ts'
import { addDeviceClient, decideDevice, DEVICE_GRANT } from '../../helpers/device.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { freePort, startRedis } from '../../helpers/redis.ts'

const redis = await startRedis(t)
const secret = randomBytes(32).toString('base64url')
/** Every instance's clock: real time plus what the test stepped. */
const { now: clock, step } = steppedClock()

async function instance (config: Partial<GatewayConfig>, port = 0) {
  const store = await new RedisStore(redis.url, { prefix: redis.prefix, clock }).connect()
  const app = await buildGateway({ store, secret, config, clock })
  const origin = await app.listen({ port, host: '127.0.0.1' })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  return { app, store, origin }
}

const port = await freePort()
const issuerUrl = `http://127.0.0.1:${port}`
const a = await instance({ issuer: issuerUrl }, port)
// A second instance behind the same public name: what one records, the other sees.
const b = await instance({ issuer: issuerUrl })

const insecure = { [oauth.allowInsecureRequests]: true }
const mac = { recognizedTokenTypes: { mac: () => {} } }
const as = await oauth.processDiscoveryResponse(new URL(issuerUrl), await oauth.discoveryRequest(new URL(issuerUrl), { ...insecure, algorithm: 'oauth2' }))

/** One poll as the library makes and reads it: the token answer, or the error code it threw. */
async function poll (client: oauth.Client, auth: oauth.ClientAuth, deviceCode: string, at = as): Promise<oauth.TokenEndpointResponse | string> {
  const response = await oauth.deviceCodeGrantRequest(at, client, auth, deviceCode, insecure)
  try {
    return await oauth.processDeviceCodeResponse(at, client, response, mac)
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) return error.error
    throw error
  }
}

t.test('discovery names the device endpoint and grant', async (t) => {
  t.equal(as.device_authorization_endpoint, `${issuerUrl}/oauth2/device_authorization`)
  t.ok(as.grant_types_supported?.includes(DEVICE_GRANT))
})

for (const kind of ['public', 'confidential'] as const) {
  t.test(`oauth4webapi, a ${kind} device client: pending, slow_down, approved once, the token signs a call`, async (t) => {
    const { clientId, clientSecret } = await addDeviceClient(a.store, { public: kind === 'public' })
    const client: oauth.Client = { client_id: clientId }
    const auth = kind === 'public' ? oauth.None() : oauth.ClientSecretPost(clientSecret!)
    const started = await oauth.processDeviceAuthorizationResponse(as, client,
      await oauth.deviceAuthorizationRequest(as, client, auth, { scope: '1 3' }, insecure))
    t.match(started, { verification_uri: `${issuerUrl}/oauth2/device`, expires_in: 600, interval: 5 })

    t.equal(await poll(client, auth, started.device_code), 'authorization_pending')
    step(2000)
    t.equal(await poll(client, auth, started.device_code), 'slow_down')
    step(10_000)
    t.equal(await poll(client, auth, started.device_code), 'authorization_pending', 'at the new interval, 10 s')

    const user = await addUser(a.store)
    await decideDevice(new InjectBrowser(a.app), user, started.user_code, 'allow')
    step(10_000)
    const tokens = await poll(client, auth, started.device_code)
    if (typeof tokens === 'string') throw new Error(`no token: ${tokens}`)
    t.match(tokens, { token_type: 'mac', scope: '1 3', mac_algorithm: 'HmacSha1' })
    step(10_000)
    t.equal(await poll(client, auth, started.device_code), 'invalid_grant', 'redeemed once')

    const api = createSignedFetch({ accessToken: tokens.access_token, macKey: tokens.mac_key as string })
    const answer = await api(`${a.origin}/user/openidV2`)
    t.equal(answer.status, 200, 'the token signs a call to the open API')
    t.match(await answer.json(), { result: 'ok', data: { openid: tokens.openId } })
  })
}

t.test('oauth4webapi: denied, expired', async (t) => {
  const { clientId } = await addDeviceClient(a.store)
  const client: oauth.Client = { client_id: clientId }
  const start = async () => await oauth.processDeviceAuthorizationResponse(as, client, await oauth.deviceAuthorizationRequest(as, client, oauth.None(), {}, insecure))

  const denied = await start()
  await decideDevice(new InjectBrowser(a.app), await addUser(a.store), denied.user_code, 'deny')
  t.equal(await poll(client, oauth.None(), denied.device_code), 'access_denied')

  const expired = await start()
  t.equal(await poll(client, oauth.None(), expired.device_code), 'authorization_pending')
  step(600_000)
  t.equal(await poll(client, oauth.None(), expired.device_code), 'expired_token')
})

t.test('two instances on one Redis: started on one, approved on the other, polled on both', async (t) => {
  const { clientId } = await addDeviceClient(a.store)
  const client: oauth.Client = { client_id: clientId }
  const started = await oauth.processDeviceAuthorizationResponse(as, client, await oauth.deviceAuthorizationRequest(as, client, oauth.None(), {}, insecure))
  const onB = { ...as, token_endpoint: `${b.origin}/oauth2/rfc/token` }

  t.equal(await poll(client, oauth.None(), started.device_code), 'authorization_pending', 'on A')
  step(1000)
  t.equal(await poll(client, oauth.None(), started.device_code, onB), 'slow_down', 'B knows A\'s last poll')
  step(10_000)
  t.equal(await poll(client, oauth.None(), started.device_code), 'authorization_pending', 'A knows B grew the interval: 10 s now')
  step(5000)
  t.equal(await poll(client, oauth.None(), started.device_code), 'slow_down', 'on A, at 5 s')

  const done = await decideDevice(new InjectBrowser(b.app), await addUser(b.store), started.user_code, 'allow')
  t.match(done.body, /Device connected/, 'approved on B')
  step(15_000)
  const tokens = await poll(client, oauth.None(), started.device_code)
  t.type(tokens, 'object', 'issued on A')
})

t.test('two pollers racing for one approval get one token set between them', async (t) => {
  const { clientId } = await addDeviceClient(a.store)
  const client: oauth.Client = { client_id: clientId }
  const user = await addUser(a.store)
  for (let round = 0; round < 5; round++) {
    const started = await oauth.processDeviceAuthorizationResponse(as, client, await oauth.deviceAuthorizationRequest(as, client, oauth.None(), {}, insecure))
    await decideDevice(new InjectBrowser(a.app), user, started.user_code, 'allow')
    const onB = { ...as, token_endpoint: `${b.origin}/oauth2/rfc/token` }
    const answers = await Promise.all([poll(client, oauth.None(), started.device_code), poll(client, oauth.None(), started.device_code, onB)])
    const issued = answers.filter((answer) => typeof answer === 'object')
    t.equal(issued.length, 1, `round ${round + 1}: one token set (the other: ${answers.find((answer) => typeof answer === 'string')})`)
    step(60_000)
  }
})

t.test('the device grant\'s keys expire in Redis', async (t) => {
  const { clientId } = await addDeviceClient(a.store)
  const client: oauth.Client = { client_id: clientId }
  await oauth.deviceAuthorizationRequest(as, client, oauth.None(), {}, insecure)
  const keys = [...await a.store.redis.keys(`${redis.prefix}usercode:*`), ...await a.store.redis.keys(`${redis.prefix}{g:*}:dc:*`)]
  t.ok(keys.length >= 2)
  for (const key of keys) t.ok(await a.store.redis.ttl(key) > 0, `${key.replace(redis.prefix, '')} has a TTL`)
})
