// The plugin's own surface: every option validated with the field named, and a fault of ours
// answered as a 500 of its own (logged with its stack, nothing internal in the answer), in each
// answer's form.
import Fastify from 'fastify'
import t from 'tap'
import { memoryLog } from '../../helpers/memory-log.ts'
import macgate, { compileValidator, errors, MemoryStore, toOAuthError, type ClientRecord } from '../../../plugin/index.ts'
import { addClient, REDIRECT_URI } from '../../helpers/app.ts'

/** A store with one fault: reading a client throws something no store should. */
class FaultyStore extends MemoryStore {
  async getClient (_clientId: string): Promise<ClientRecord | undefined> {
    throw new TypeError('secret internal detail')
  }
}

t.test('every option is validated, naming the field and what it may be', async (t) => {
  const store = new MemoryStore()
  t.teardown(async () => { await store.close() })
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ nonceSkewMinutes: -1 }, /^macgate option\.nonceSkewMinutes must be a whole number from 1 to 60$/],
    [{ nonceSkewMinutes: 1.5 }, /option\.nonceSkewMinutes must be integer/],
    [{ tokenCache: { max: -1 } }, /option\.tokenCache\.max must be a whole number of at least 0/],
    [{ tokenCache: { maxAge: 5 } }, /option\.tokenCache has an unknown field maxAge \(known: max, maxAgeMs, negativeTtlMs\)/],
    [{ signInRateLimit: 0 }, /option\.signInRateLimit must be a whole number of at least 1/],
    [{ secureCookies: 'yes' }, /option\.secureCookies must be boolean/],
    [{ tokenErrorStatus: 500 }, /option\.tokenErrorStatus can only be 200/],
    [{ mac: { nonceSkewMinutes: 5 } }, /option has an unknown field mac/],
    [{ codeTtl: 601, accessTokenTtl: 0 }, /codeTtl must be a whole number from 1 to 600; macgate option\.accessTokenTtl must be a whole number of at least 1$/]
  ]
  for (const [options, message] of cases) {
    const app = Fastify()
    await t.rejects(async () => { await app.register(macgate, { store, ...options }) }, { name: 'RangeError', message }, JSON.stringify(options))
    await app.close()
  }
  for (const secret of ['', 5]) {
    const app = Fastify()
    await t.rejects(async () => { await app.register(macgate, { store, secret } as never) }, { name: 'RangeError', message: 'macgate option secret must be a non-empty string' }, `secret ${JSON.stringify(secret)}`)
    await app.close()
  }
  const app = Fastify()
  await t.rejects(async () => { await app.register(macgate, {} as never) }, { name: 'TypeError', message: /store is required/ })
  await app.close()
})

t.test('compileValidator, for an embedding app\'s own config: each problem named in one sentence', async (t) => {
  const validate = compileValidator<{ ratio: number, level: string, retries: number }>({
    type: 'object',
    additionalProperties: false,
    properties: {
      ratio: { type: 'number', maximum: 1 },
      level: { enum: ['low', 'high'] },
      retries: { type: 'integer', minimum: 0, default: 3 },
      extra: { type: 'object', additionalProperties: false }
    },
    required: ['level']
  }, 'settings')
  t.same(validate({ level: 'low' }), { level: 'low', retries: 3 }, 'defaults filled in')
  const input = { level: 'high' }
  validate(input)
  t.same(input, { level: 'high' }, 'on a copy: the input is untouched')
  t.throws(() => validate(undefined), { name: 'SchemaError', problems: ['settings must have required property \'level\''] }, 'nothing given reads as an empty object')
  t.throws(() => validate({ ratio: 1.5, level: 'mid', retries: -1, extra: { x: 1 } }), {
    name: 'SchemaError',
    problems: [
      'settings.ratio must be a number of at most 1',
      'settings.level must be one of "low", "high"',
      'settings.retries must be a whole number of at least 0',
      'settings.extra has an unknown field x (known: )'
    ]
  })
  t.throws(() => validate({ level: 'low', ratio: 'x' }), { name: 'SchemaError', problems: ['settings.ratio must be number'] })
})

t.test('the defaults are filled in, once', async (t) => {
  const store = new MemoryStore()
  const app = Fastify()
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  await app.register(macgate, { store, tokenCache: { max: 5 } })
  t.match(app.macgate, { codeTtl: 300, accessTokenTtl: 7_776_000, nonceSkewMinutes: 5, tokenCache: { max: 5, maxAgeMs: 300_000, negativeTtlMs: 10_000 } })
})

t.test('an unexpected fault: 500 of its own, in each answer\'s form, the stack in the log only', async (t) => {
  const store = new FaultyStore()
  const log = memoryLog()
  const app = Fastify({ logger: { level: 'error', stream: log.stream } })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  await app.register(macgate, { store })
  const { clientId } = await addClient(new MemoryStore())

  const page = await app.inject({ url: `/oauth2/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code' }).toString()}` })
  t.equal(page.statusCode, 500)
  t.match(page.headers['content-type'], /^text\/html/)
  t.match(page.body, '<span id="error-code">500</span>: <span id="error-description">internal server error</span>')
  t.match(page.body, 'Something went wrong on our side')
  t.notMatch(page.body, 'secret internal detail', 'nothing internal in the answer')
  t.equal(page.headers['x-frame-options'], 'DENY')

  const token = await app.inject({ url: `/oauth2/token?${new URLSearchParams({ client_id: clientId, client_secret: 'x', grant_type: 'authorization_code', code: 'c', redirect_uri: REDIRECT_URI }).toString()}` })
  t.equal(token.statusCode, 500)
  t.equal(token.body, '&&&START&&&{"error":500,"error_description":"internal server error"}')

  const standardToken = await app.inject({
    method: 'POST',
    url: '/oauth2/rfc/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ client_id: clientId, client_secret: 'x', grant_type: 'authorization_code', code: 'c', redirect_uri: REDIRECT_URI }).toString()
  })
  t.equal(standardToken.statusCode, 500)
  t.strictSame(standardToken.json(), { error: 'server_error', error_description: 'internal server error' }, 'the RFC form')

  const logged = log.lines.filter((line) => (line.err as { message?: string } | undefined)?.message === 'secret internal detail')
  t.equal(logged.length, 3, 'each fault logged once')
  t.match(String((logged[0]?.err as { stack?: string }).stack), /TypeError: secret internal detail\n\s+at FaultyStore\.getClient/, 'with its stack')
})

t.test('toOAuthError: ours kept, framework 4xx by status, anything else internal', async (t) => {
  const ours = errors.invalidCode()
  t.equal(toOAuthError(ours), ours)
  const tooLarge = toOAuthError(Object.assign(new Error('Request body is too large'), { statusCode: 413 }))
  t.ok(errors.payloadTooLarge.is(tooLarge))
  t.match(tooLarge, { errno: 96002, statusCode: 413, message: 'Request body is too large' })
  const teapot = toOAuthError(Object.assign(new Error('teapot'), { statusCode: 418 }))
  t.match(teapot, { errno: 96002, statusCode: 400 }, 'an unlisted 4xx is a bad request')
  // reply-from's 503 is its DNS failure (ENOTFOUND): the upstream could not be reached. A refused
  // or reset connection it reports as a 500 of its own: the gateway classifies those itself
  // (gateway/upstreams/failure.ts), tested against real upstreams in test/gateway-upstreams.test.ts.
  t.ok(errors.upstreamUnavailable.is(toOAuthError(Object.assign(new Error('Service Unavailable'), { statusCode: 503, cause: Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }) }))), 'the proxy\'s 503 (DNS) is an unreachable upstream')
  t.equal(toOAuthError(Object.assign(new Error('Service Unavailable'), { statusCode: 503 })).statusCode, 502)
  t.ok(errors.upstreamTimeout.is(toOAuthError(Object.assign(new Error('timeout'), { statusCode: 504 }))))
  for (const thrown of [new Error('boom'), 'a string', null, Object.assign(new Error('x'), { statusCode: 500 })]) {
    const failure = toOAuthError(thrown)
    t.ok(errors.internal.is(failure), `${String(thrown)} is internal`)
    t.equal(failure.message, 'internal server error')
  }
  t.notOk(errors.invalidRequest.is(errors.invalidAuthorization()), 'kinds sharing a contract code stay apart')
  t.equal(errors.invalidAuthorization().code, 'OA_INVALID_REQUEST', 'and carry the contract\'s name')
})
