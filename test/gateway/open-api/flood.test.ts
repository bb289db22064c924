// A flood of malformed requests (deterministic, fixed seed): never a 500, never a crash, always
// the contract's error shapes, never a redirect anywhere but to a registered redirect URI. Sized
// as the fuzz is (test/helpers/fuzz-size.ts): 455 and 130 by default, five times that with FUZZ_FULL=1.
import { BROKEN_ESCAPES, CONTROLS, decodedOr, enc, FORM, generator, INVALID_UTF8, PREFIX, REGISTERED_ORIGIN } from '../../helpers/fuzz-pools.ts'
import { fuzzCount } from '../../helpers/fuzz-size.ts'
import type { FastifyInstance, InjectOptions } from 'fastify'
import t, { type Test } from 'tap'
import { addClient, addUser, buildTestApp, callToken, obtainCode, REDIRECT_URI } from '../../helpers/app.ts'

type Pairs = Array<[string, string]> // names and values, already percent-encoded (or deliberately not)
interface Flood { method: string, path: string, headers: Record<string, string>, body?: string, remoteAddress: string, label: string }

const decoded = (value: string) => decodedOr(value, value)
const LONG = 'x'.repeat(10 * 1024)
const UNICODE_URIS = ['https://app.example.com/callbäck', 'https://ａpp.example.com/callback', 'https://app.example.com/callback?ü=ü', 'https://äpp.example.com/callback', 'https://app.example.com/callback/\u202e', 'https://app.example.com\u2025/callback']
const METHODS = ['PUT', 'DELETE', 'PATCH', 'OPTIONS']
const MUTATIONS = ['none', 'missing', 'repeat', 'long', 'bad-utf8', 'bad-escape', 'control', 'many', 'method', 'content-type', 'big-body', 'basic', 'unicode-redirect'] as const

function pools (clientId: string, clientSecret: string): Record<string, string[]> {
  const ids = [clientId, '1', '0', 'abc', '9223372036854775808', '-5', '', '１２３', `${clientId}0`]
  const uris = [REDIRECT_URI, `${REDIRECT_URI}?x=1`, 'https://app.example.com/callback/../callback', 'https://app.example.com/callback#f',
    'https://evil.example/callback', 'http://app.example.com/callback', 'https://APP.example.com:443/callback', 'javascript:alert(1)', '//evil.example/callback', '', ...UNICODE_URIS]
  const opaque = ['', 'abc', `AAAAAAAAAAAAAAAA.${'B'.repeat(22)}${'C'.repeat(16)}`, `${'A'.repeat(16)}.`]
  return {
    client_id: ids,
    redirect_uri: uris,
    response_type: ['code', 'token', 'id_token', '', 'CODE', 'code token'],
    scope: ['1 3', '1', '999', '1 999', '', '   ', '6 4', '2'],
    state: ['abc', '', 'ü', 'x'.repeat(3000), '<script>alert(1)</script>'],
    skip_confirm: ['true', 'false', 'yes', 'TRUE', ''],
    code_challenge_method: ['S256', 'plain', ''],
    code_challenge: ['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', 'short'],
    grant_type: ['authorization_code', 'refresh_token', 'password', 'client_credentials', '', 'AUTHORIZATION_CODE'],
    client_secret: [clientSecret, 'wrong', '', 'x'.repeat(200)],
    code: opaque,
    refresh_token: opaque,
    token_type: ['mac', 'bearer', ''],
    code_verifier: ['a'.repeat(43), 'short'],
    username: ['alice', '', 'nobody', '<b>bold</b>', 'x'.repeat(100)],
    password: ['wrong password', '', 'correct horse battery'],
    return_to: ['/oauth2/authorize?client_id=1', '//evil.example/oauth2/authorize?', 'https://evil.example/oauth2/authorize?', '/oauth2/authorize', '/oauth2/signout', ''],
    _csrf: ['bogus', '']
  }
}

const PARAMS: Record<string, string[]> = {
  authorize: ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'skip_confirm', 'code_challenge_method', 'code_challenge'],
  token: ['grant_type', 'client_id', 'client_secret', 'redirect_uri', 'code', 'refresh_token', 'token_type', 'code_verifier', 'scope'],
  signin: ['username', 'password', 'return_to', '_csrf']
}

/** `count` requests; request i carries mutation i mod 13, the rest is drawn from the seed. */
function generate (count: number, seed: number, pool: Record<string, string[]>, session: { cookie: string, csrf: string }): Flood[] {
  const { next: random, pick } = generator(seed)
  const floods: Flood[] = []
  for (let i = 0; i < count; i++) {
    const mutation = MUTATIONS[i % MUTATIONS.length]!
    const target = pick(['authorize', 'authorize', 'token-get', 'token-post', 'signin-get', 'signin-post'] as const)
    const family = target.split('-')[0]!
    const names = PARAMS[family]!
    // The first value of each pool is the well-formed one: favour it, so that many requests get
    // past the first checks and exercise the later ones.
    const value = (name: string) => random() < 0.7 ? pool[name]![0]! : pick(pool[name]!)
    let pairs: Pairs = names.filter(() => random() < (mutation === 'missing' ? 0.3 : 0.9)).map((name) => [name, enc(value(name))])
    const headers: Record<string, string> = {}
    let method = target.endsWith('-post') ? 'POST' : 'GET'
    let contentType = FORM
    let padding = ''
    const some = () => Math.floor(random() * Math.max(pairs.length, 1))
    const setValue = (value: string) => { if (pairs.length === 0) pairs.push([pick(names), value]); else pairs[some()]![1] = value }
    if (family === 'signin' && method === 'POST' && random() < 0.5) {
      headers.cookie = session.cookie
      pairs = pairs.filter(([name]) => name !== '_csrf').concat([['_csrf', enc(session.csrf)]])
    }
    switch (mutation) {
      case 'repeat': if (pairs.length > 0) pairs.push([...pairs[some()]!]); break
      case 'long': setValue(LONG); break
      case 'bad-utf8': setValue(`a${pick(INVALID_UTF8)}`); break
      case 'bad-escape': pick([() => setValue(pick(BROKEN_ESCAPES)), () => pairs.push([pick(BROKEN_ESCAPES), 'x'])])(); break
      case 'control': setValue(pick(CONTROLS)); break
      case 'many': for (let n = 0; n < 200; n++) pairs.push([`p${n}`, String(n)]); break
      case 'method': method = pick(METHODS); break
      case 'content-type': method = 'POST'; contentType = pick(['application/json', 'text/plain', 'multipart/form-data; boundary=zz']); break
      case 'big-body': method = 'POST'; padding = `&padding=${'y'.repeat(17 * 1024)}`; break
      case 'basic': headers.authorization = pick(['Basic !!!!', `Basic ${Buffer.from('no colon').toString('base64')}`, `Basic ${Buffer.from('%zz:%FF').toString('base64')}`,
        `Basic ${'A'.repeat(5000)}`, 'Basic', `Basic ${Buffer.from(`${pool.client_id![0]}:${'wrong'}`).toString('base64')}`, 'basic ==']); break
      case 'unicode-redirect': pairs.push(['redirect_uri', pick([enc(pick(UNICODE_URIS)), pick(UNICODE_URIS)])]); break
    }
    const form = pairs.map(([name, value]) => `${name}=${value}`).join('&')
    // The authorization endpoint reads its parameters from the query even on POST (the decision).
    const inQuery = method === 'GET' || family === 'authorize'
    let body: string | undefined
    if (method !== 'GET') {
      const payload = (inQuery ? 'decision=allow' : form) + padding
      headers['content-type'] = contentType
      body = contentType === 'application/json'
        // JSON carries typed values a form cannot: numbers, objects, booleans.
        ? JSON.stringify(Object.fromEntries(pairs.map(([name, value]) => [name, pick<unknown>([decoded(value), decoded(value), 12345, { value }, true, [value]])])))
        : contentType.startsWith('multipart') ? `--zz\r\nContent-Disposition: form-data; name="a"\r\n\r\n${payload}\r\n--zz--\r\n` : payload
    }
    const path = `/oauth2/${family}${inQuery && form !== '' ? `?${form}` : ''}`
    floods.push({ method, path, headers, remoteAddress: `198.51.100.${i % 250}`, label: `#${i} ${mutation}`, ...(body !== undefined && { body }) })
  }
  return floods
}

/** The requests found by hand that once broke something; they run in every flood. */
function regressions (clientId: string, clientSecret: string): Flood[] {
  const json = (body: unknown): Flood => ({ method: 'POST', path: '/oauth2/token', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), remoteAddress: '192.0.2.1', label: `json ${JSON.stringify(body).slice(0, 60)}` })
  const base = { grant_type: 'authorization_code', client_id: clientId, redirect_uri: REDIRECT_URI }
  return [
    json({ ...base, client_secret: 5, code: 'x' }),
    json({ ...base, client_secret: { a: 1 }, code: 'x' }),
    json({ ...base, client_secret: clientSecret, code: 12345 }),
    json({ ...base, grant_type: 'refresh_token', client_secret: clientSecret, refresh_token: true }),
    { method: 'OPTIONS', path: '/oauth2/token', headers: {}, remoteAddress: '192.0.2.1', label: 'OPTIONS /oauth2/token' }
  ]
}

const familyOf = (path: string) => path.split('?')[0]!.slice('/oauth2/'.length)

/** What is wrong with one answer, or undefined. */
function problemOf (request: Flood, status: number, headers: Record<string, unknown>, body: string): string | undefined {
  if (status >= 500 || status < 200) return `status ${status}`
  const family = familyOf(request.path)
  const location = headers.location as string | undefined
  if (family === 'token') {
    if (!body.startsWith(PREFIX)) return `token answer without ${PREFIX}: ${status} ${body.slice(0, 80)}`
    const json = JSON.parse(body.slice(PREFIX.length)) as { error?: unknown }
    if (!Number.isInteger(json.error) || (json.error as number) < 96001 || (json.error as number) > 96013) return `token error ${String(json.error)}`
    if (status < 400) return `token status ${status}`
    if (headers['content-type'] !== 'application/json;charset=UTF-8' || headers['cache-control'] !== 'no-store') return 'token answer headers'
    return undefined
  }
  if (status !== 404 && (headers['cache-control'] !== 'no-store' || headers['x-frame-options'] !== 'DENY')) return 'page without no-store / DENY'
  if (location !== undefined) {
    if (family === 'signin' && location.startsWith('/oauth2/authorize?')) return undefined
    if (family === 'authorize' && location.startsWith('/oauth2/signin?return_to=%2Foauth2%2Fauthorize%3F')) return undefined
    if (family === 'authorize' && new URL(location, 'http://gateway.invalid').origin === REGISTERED_ORIGIN) {
      const error = new URL(location).searchParams.get('error')
      return error === null || /^960(0[1-9]|1[0-3])$/.test(error) ? undefined : `redirect error ${error}`
    }
    return `redirect to ${location}`
  }
  if (family === 'authorize' && request.method === 'GET') {
    if (status !== 400 || !/^text\/html/.test(String(headers['content-type']))) return `authorize GET answered ${status} ${String(headers['content-type'])}`
    if (!/id="error-code">960(0[1-9]|1[0-3])</.test(body)) return 'authorize error page without an error code'
  }
  if (status !== 404 && !/^text\/html/.test(String(headers['content-type']))) return `page answered ${String(headers['content-type'])}`
  return undefined
}

async function flood (t: Test, store: 'memory' | 'redis', count: number): Promise<void> {
  const started = Date.now()
  const { app } = await buildTestApp(t, { store })
  const { clientId, clientSecret } = await addClient(app.macgate.store)
  await addUser(app.macgate.store, 'alice', 'correct horse battery')
  const signInPage = await app.inject({ url: '/oauth2/signin', remoteAddress: '192.0.2.9' })
  const session = { cookie: String(signInPage.headers['set-cookie']).split(';')[0]!, csrf: /name="_csrf" value="([^"]+)"/.exec(signInPage.body)![1]! }
  const requests = [...generate(count, 0x5eed, pools(clientId, clientSecret), session), ...regressions(clientId, clientSecret)]

  const problems: Array<{ family: string, text: string }> = []
  const statuses = new Map<number, number>()
  const kinds = { clientErrorRedirects: 0, errorPages: 0, tokenErrors: 0 }
  for (const request of requests) {
    const options = { method: request.method, url: request.path, headers: request.headers, remoteAddress: request.remoteAddress, ...(request.body !== undefined && { payload: request.body }) } as InjectOptions
    const answer = await app.inject(options)
    statuses.set(answer.statusCode, (statuses.get(answer.statusCode) ?? 0) + 1)
    const location = String(answer.headers.location ?? '')
    if (location.startsWith(`${REDIRECT_URI}?`) && /[?&]error=960/.test(location)) kinds.clientErrorRedirects++
    if (answer.statusCode === 400 && answer.body.includes('id="error-code"')) kinds.errorPages++
    if (answer.body.startsWith(`${PREFIX}{"error"`)) kinds.tokenErrors++
    const problem = problemOf(request, answer.statusCode, answer.headers, answer.body)
    if (problem !== undefined) problems.push({ family: problem.startsWith('status 5') ? 'crash' : familyOf(request.path), text: `${request.label}: ${request.method} ${request.path.slice(0, 100)} → ${problem}` })
  }
  const found = (family: string) => problems.filter((problem) => problem.family === family).map(({ text }) => text)
  t.comment(`${requests.length} requests, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}, ${Date.now() - started} ms`)
  t.ok(requests.length > count, `${requests.length} requests sent`)
  t.comment(`answers: ${JSON.stringify(kinds)}`)
  t.ok(kinds.clientErrorRedirects >= count / 40 && kinds.errorPages >= count / 20 && kinds.tokenErrors >= count / 20, 'the flood reached each kind of answer')
  t.same(found('crash'), [], 'no answer >= 500')
  t.same(found('token'), [], '/oauth2/token: always &&&START&&& and an error of the 96001-96013 family')
  t.same(found('authorize'), [], '/oauth2/authorize: a 400 error page, or a redirect only to a registered origin')
  t.same(found('signin'), [], '/oauth2/signin: pages, or a redirect only into the authorization endpoint')
  await stillServes(t, app, clientId, clientSecret)
}

/** After the flood, the ordinary code flow still works end to end. */
async function stillServes (t: Test, app: FastifyInstance, clientId: string, clientSecret: string): Promise<void> {
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'still alive')
  const { code, location } = await obtainCode(app, clientId, { state: 'after-flood' })
  t.equal(location.searchParams.get('state'), 'after-flood')
  const answer = await callToken(app, { client_id: clientId, client_secret: clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code })
  t.equal(answer.status, 200, 'a normal exchange still succeeds')
  t.equal(answer.body.scope, '1 3 4 6')
  t.equal(answer.body.token_type, 'mac')
}

t.test('flood on the memory store', async (t) => await flood(t, 'memory', fuzzCount(2275)))
t.test('flood on the redis store (shorter)', async (t) => await flood(t, 'redis', fuzzCount(650)))
