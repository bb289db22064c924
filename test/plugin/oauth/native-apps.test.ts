// Native apps (RFC 8252, contract §12), registered through RFC 7591 as a command-line or desktop
// app would: a loopback redirect on a port the app's listener got from the OS at run time (§7.3),
// the code redeemed only with that same port; `localhost` keeping its exact port (§8.3); and a
// private-use scheme (§7.1), for public clients only.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import * as oauth from 'oauth4webapi'
import t from 'tap'
import { registerClient, ScopeRegistry } from '../../../plugin/index.ts'
import { STANDARD_TOKEN_PATH } from '../../../plugin/oauth/standard-token-endpoint.ts'
import { addUser, authorizeUrl, buildTestApp, InjectBrowser } from '../../helpers/app.ts'

const nativeApp = (redirectUris: string[]) => ({ client_name: 'CLI tool', redirect_uris: redirectUris, token_endpoint_auth_method: 'none' })

async function registerNative (app: Awaited<ReturnType<typeof buildTestApp>>['app'], redirectUris: string[]): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/oauth2/register', payload: nativeApp(redirectUris) })
  if (response.statusCode !== 201) throw new Error(response.body)
  return (response.json() as { client_id: string }).client_id
}

async function redeem (app: Awaited<ReturnType<typeof buildTestApp>>['app'], form: Record<string, string>): Promise<{ status: number, body: Record<string, unknown> }> {
  const response = await app.inject({ method: 'POST', url: STANDARD_TOKEN_PATH, payload: new URLSearchParams(form).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  return { status: response.statusCode, body: response.json() }
}

t.test('a loopback redirect on a port chosen at run time; the code redeems only on that port', async (t) => {
  const { app, store } = await buildTestApp(t, { registration: 'open' })
  for (const [host, registered] of [['127.0.0.1', 'http://127.0.0.1/callback'], ['::1', 'http://[::1]/callback']] as const) {
    await t.test(host, async (t) => {
      const clientId = await registerNative(app, [registered])
      // The app's own listener, on whatever port the OS gives it, receives the browser's redirect.
      let received: URL | undefined
      const listener = createServer((request, response) => {
        received = new URL(request.url!, `http://${request.headers.host!}`)
        response.end('You may close this window.')
      }).listen(0, host)
      await once(listener, 'listening')
      t.teardown(() => { listener.close() })
      const { port } = listener.address() as AddressInfo
      const redirectUri = registered.replace('/callback', `:${port}/callback`)

      const verifier = oauth.generateRandomCodeVerifier()
      const browser = new InjectBrowser(app)
      const user = await addUser(store)
      await browser.signIn(user.username, user.password)
      const query = { client_id: clientId, redirect_uri: redirectUri, response_type: 'code', state: 's1', code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }
      const decided = await browser.decide(authorizeUrl(query), 'allow')
      const location = decided.headers.location as string
      t.ok(location.startsWith(`${redirectUri}?code=`), `back to the app's own port (${location})`)
      await (await fetch(location)).text()
      t.equal(received?.pathname, '/callback', 'the listener got the redirect')
      const code = received!.searchParams.get('code')!
      t.equal(received!.searchParams.get('state'), 's1')

      const form = { grant_type: 'authorization_code', client_id: clientId, code, code_verifier: verifier }
      const otherPort = await redeem(app, { ...form, redirect_uri: registered.replace('/callback', `:${port === 65535 ? 1 : port + 1}/callback`) })
      t.match(otherPort, { status: 400, body: { error: 'invalid_grant', error_description: 'code was issued for another redirect_uri' } }, 'another port does not redeem it')
      const noPort = await redeem(app, { ...form, redirect_uri: registered })
      t.match(noPort, { status: 400, body: { error: 'invalid_grant' } }, 'nor the registered URI without the port')
      const issued = await redeem(app, { ...form, redirect_uri: redirectUri })
      t.equal(issued.status, 200, JSON.stringify(issued.body))
      t.match(issued.body, { token_type: 'mac', refresh_token: /./ })
    })
  }
})

t.test('localhost keeps its exact port; the strict option keeps the port rule for IP literals', async (t) => {
  const { app, store } = await buildTestApp(t, { registration: 'open', strictRedirectUri: true })
  const clientId = await registerNative(app, ['http://localhost:8400/cb', 'http://127.0.0.1/cb'])
  const browser = new InjectBrowser(app)
  const user = await addUser(store)
  await browser.signIn(user.username, user.password)
  const base = { client_id: clientId, response_type: 'code', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' }
  t.equal((await browser.get(authorizeUrl({ ...base, redirect_uri: 'http://localhost:8401/cb' }))).statusCode, 400, 'localhost on another port: no')
  t.equal((await browser.get(authorizeUrl({ ...base, redirect_uri: 'http://localhost:8400/cb' }))).statusCode, 200, 'localhost on its port')
  t.equal((await browser.get(authorizeUrl({ ...base, redirect_uri: 'http://127.0.0.1:61234/cb' }))).statusCode, 200, 'an IP literal on any port, strict or not')
  t.equal((await browser.get(authorizeUrl({ ...base, redirect_uri: 'http://127.0.0.1:61234/cb?x=1' }))).statusCode, 400, 'strict: nothing else may differ')
})

t.test('a private-use scheme: public clients only, never a look-alike of a scheme of the web', async (t) => {
  const { app, store } = await buildTestApp(t, { registration: 'open' })
  const redirectUri = 'com.example.app:/oauth2redirect'
  const clientId = await registerNative(app, [redirectUri])
  const verifier = oauth.generateRandomCodeVerifier()
  const browser = new InjectBrowser(app)
  const user = await addUser(store)
  await browser.signIn(user.username, user.password)
  const query = { client_id: clientId, redirect_uri: redirectUri, response_type: 'code', code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }
  const decided = await browser.decide(authorizeUrl(query), 'allow')
  t.equal(decided.statusCode, 303)
  const location = new URL(decided.headers.location as string)
  t.equal(`${location.protocol}${location.pathname}`, redirectUri, 'the app is opened by its scheme')
  const issued = await redeem(app, { grant_type: 'authorization_code', client_id: clientId, redirect_uri: redirectUri, code: location.searchParams.get('code')!, code_verifier: verifier })
  t.equal(issued.status, 200, JSON.stringify(issued.body))
  t.equal((await browser.get(authorizeUrl({ ...query, redirect_uri: 'com.example.other:/oauth2redirect' }))).statusCode, 400, 'another scheme does not match')
  t.equal((await browser.get(authorizeUrl({ ...query, redirect_uri: 'com.example.app:/other' }))).statusCode, 400, 'nor another path')
  t.equal((await browser.get(authorizeUrl({ ...query, redirect_uri: `${redirectUri}?from=app` }))).statusCode, 200, 'extra data in the query may differ (contract §2)')

  const registry = new ScopeRegistry()
  const confidential = registerClient(store, registry, { name: 'X', redirectUris: [redirectUri] })
  await t.rejects(confidential, /private-use scheme only for a public client/, 'an operator cannot give one to a confidential client either')
  const pub = await registerClient(store, registry, { name: 'X', redirectUris: [redirectUri], public: true })
  t.strictSame(pub.client.redirectUris, [redirectUri], 'but can to a public one')
  for (const uri of ['javascript:/alert(1)', 'data:/text', 'file:/etc/passwd', 'https.example.app:/cb', 'http.evil:/cb', 'myapp:/cb', 'com.example.app://host/cb']) {
    await t.rejects(registerClient(store, registry, { name: 'X', redirectUris: [uri], public: true }), /must be an absolute http\(s\) URI or a private-use scheme URI/, uri)
  }
})
