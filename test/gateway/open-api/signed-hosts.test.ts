// Signed host names (contract §6, `signedHosts`): a signature over a listed public name is accepted
// whatever Host the request reached us under; only with the primary query form; one nonce, once.
import t from 'tap'
import { ConfigError, parseConfig } from '../../../gateway/config/gateway-config.ts'
import { awayFromMinuteEdge, buildTestGateway, liveToken, nonceAt, openApiError, signedInject } from '../../helpers/gateway.ts'

const SDK_HOST = 'open.account.xiaomi.com'
const MISMATCH = openApiError(96012, 'mac does not match')

t.test('a request signed over a listed host name is accepted, once', async (t) => {
  const { app } = await buildTestGateway(t, { config: { signedHosts: ['Open.Account.Xiaomi.com', 'api.example.org'] } })
  const token = await liveToken(app)
  await awayFromMinuteEdge()
  const asSdk = { url: '/user/profile', token: token.accessToken, macKey: token.macKey, host: '127.0.0.1:8080', sign: { host: SDK_HOST } }
  const nonce = nonceAt()
  const accepted = await signedInject(app, { ...asSdk, nonce })
  t.equal(accepted.statusCode, 200, 'the SDK signs its fixed public name; the request came to 127.0.0.1')
  const replayed = await signedInject(app, { ...asSdk, nonce })
  t.same([replayed.statusCode, replayed.json()], [401, openApiError(96012, 'nonce already used')], 'its nonce is spent')
  t.equal((await signedInject(app, { ...asSdk, sign: { host: 'api.example.org' } })).statusCode, 200, 'the second listed name too')
  t.equal((await signedInject(app, { ...asSdk, host: 'api.example.org', sign: { host: SDK_HOST } })).statusCode, 200, 'a listed name, whatever other listed name the Host is')
  t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey, host: '127.0.0.1:8080' })).statusCode, 200, 'the request\'s own Host still')

  const unlisted = await signedInject(app, { ...asSdk, sign: { host: 'evil.example' } })
  t.same([unlisted.statusCode, unlisted.json()], [401, MISMATCH], 'a name not listed is refused')
  const withPort = await signedInject(app, { ...asSdk, sign: { host: `${SDK_HOST}:443` } })
  t.equal(withPort.statusCode, 401, 'the port is never signed (contract §6)')
})

t.test('a listed name is tried with the primary query form only', async (t) => {
  const { app } = await buildTestGateway(t, { config: { signedHosts: [SDK_HOST] } })
  const token = await liveToken(app)
  await awayFromMinuteEdge()
  const url = '/user/profile?a=x%20y&b='
  const base = { url, token: token.accessToken, macKey: token.macKey, host: '127.0.0.1' }
  t.equal((await signedInject(app, { ...base, sign: { host: SDK_HOST, query: 'a=x y&b=' } })).statusCode, 200, 'primary form over the listed name')
  t.equal((await signedInject(app, { ...base, sign: { query: 'a=x+y&b=' } })).statusCode, 200, 'the Java form over the request\'s own Host, as before')
  const javaOverListed = await signedInject(app, { ...base, sign: { host: SDK_HOST, query: 'a=x+y&b=' } })
  t.same([javaOverListed.statusCode, javaOverListed.json()], [401, MISMATCH], 'the Java form over a listed name is refused')
  const docOverListed = await signedInject(app, { ...base, sign: { host: SDK_HOST, query: 'a=x y' } })
  t.equal(docOverListed.statusCode, 401, 'so is the documentation\'s form (empty values left out)')
})

t.test('without signedHosts only the request\'s own Host is signed', async (t) => {
  const { app } = await buildTestGateway(t)
  const token = await liveToken(app)
  const answer = await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey, host: '127.0.0.1', sign: { host: SDK_HOST } })
  t.same([answer.statusCode, answer.json()], [401, MISMATCH])
})

t.test('signedHosts: at most 5 host names, without port or scheme', async (t) => {
  const refusal = (signedHosts: unknown): string => {
    try {
      parseConfig({ signedHosts })
      return 'accepted'
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error
      return error.message
    }
  }
  t.equal(refusal(['a.example', 'b.example', 'c.example', 'd.example', 'e.example']), 'accepted')
  t.match(refusal(['a.example', 'b.example', 'c.example', 'd.example', 'e.example', 'f.example']), /config\.signedHosts must NOT have more than 5 items/)
  t.match(refusal(['api.example.com:443']), /config\.signedHosts\[0\] must match pattern/)
  t.match(refusal(['https://api.example.com']), /config\.signedHosts\[0\] must match pattern/)
  t.match(refusal(['a.example', 'a.example']), /config\.signedHosts must NOT have duplicate items/)
  t.match(refusal('api.example.com'), /config\.signedHosts must be array/)
})
