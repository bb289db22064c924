// The MAC verifier against a fake of only the store roles it takes (`VerifierStore`: the token
// lookup and the nonce log's useNonce, three methods), and its quotas against a fake of theirs (the
// counted nonce, the client reader): no MemoryStore, no Redis. This is what the roles are
// for: a part of macgate can be tested, and a store adapter written, against the few methods it uses.
import t from 'tap'
import { signRequest } from '../../../plugin/client/index.ts'
import { errors } from '../../../plugin/http/errors.ts'
import { hashSecret, mintMacKey, mintToken, newGrantId, sealMacKey } from '../../../plugin/access/credentials.ts'
import { QuotaReading, Quotas } from '../../../plugin/mac/quota.ts'
import { DENIALS, MacVerifier, type VerifierStore } from '../../../plugin/mac/verify.ts'
import type { AccessTokenRecord, ClientReader, ClientRecord, CountedUse, NonceLog, NonceUse, QuotaCount } from '../../../plugin/store/store.ts'

const SECRET = 'the fake store\'s server secret'
const HOST = 'api.example.com'

/** Three methods, each the plainest thing that keeps its role's promise. */
class FakeStore implements VerifierStore {
  readonly tokens = new Map<string, AccessTokenRecord>()
  readonly nonces = new Set<string>()

  async getAccessToken (tokenHash: string): Promise<AccessTokenRecord | undefined> {
    return this.tokens.get(tokenHash)
  }

  async onRevocation (): Promise<void> {}

  useNonce ({ key }: NonceUse): boolean {
    const seen = key.slice(0, 8)
    if (this.nonces.has(seen)) return false
    this.nonces.add(seen)
    return true
  }
}

/** The two more methods the quotas take. */
class FakeQuotaStore extends FakeStore implements NonceLog, ClientReader {
  readonly clients = new Map<string, ClientRecord>()
  readonly counters = new Map<string, number>()

  useCountedNonce (use: NonceUse, { name, window, limit }: QuotaCount): CountedUse {
    const used = this.counters.get(`${window}:${name}`) ?? 0
    if (used >= limit) return { outcome: 'over', used }
    if (!this.useNonce(use)) return { outcome: 'replayed', used }
    this.counters.set(`${window}:${name}`, used + 1)
    return { outcome: 'fresh', used: used + 1 }
  }

  async getClient (clientId: string): Promise<ClientRecord | undefined> {
    return this.clients.get(clientId)
  }
}

/** A verifier on `store` with one token; with quotas when the store is a quota store too. */
function setup<S extends FakeStore> (store: S): { store: S, verifier: MacVerifier, accessToken: string, macKey: string } {
  const accessToken = mintToken(SECRET, newGrantId())
  const macKey = mintMacKey()
  store.tokens.set(hashSecret(accessToken), {
    grantId: 'unused by the lookup',
    clientId: 'client-1',
    userId: 'user-1',
    openId: 'open-1',
    scope: ['profile'],
    macKeySealed: sealMacKey(accessToken, macKey),
    expiresAt: Date.now() + 3_600_000
  })
  const quotas = store instanceof FakeQuotaStore ? new Quotas(store) : undefined
  const verifier = new MacVerifier(store, SECRET, { nonceSkewMinutes: 5, macQueryVariants: false, tokenCache: { max: 100, maxAgeMs: 60_000, negativeTtlMs: 1000 }, ...(quotas !== undefined && { quotas }) })
  return { store, verifier, accessToken, macKey }
}

t.test('a correctly signed request is verified; the same nonce again is a replay', async (t) => {
  const { store, verifier, accessToken, macKey } = setup(new FakeStore())
  const url = '/user/profile?fields=name'
  const authorization = signRequest({ method: 'GET', url: `https://${HOST}${url}`, accessToken, macKey })

  const identity = await verifier.verify({ method: 'GET', host: HOST, path: '/user/profile', query: 'fields=name', authorization })
  t.same(identity, { openId: 'open-1', clientId: 'client-1', userId: 'user-1', scope: ['profile'] }, 'the token\'s identity')
  t.equal(store.nonces.size, 1, 'the nonce was recorded in the fake')

  await t.rejects(async () => await verifier.verify({ method: 'GET', host: HOST, path: '/user/profile', query: 'fields=name', authorization }), { kind: 'accessDenied', message: DENIALS.replayedNonce.description, reason: DENIALS.replayedNonce.reason }, 'the replayed nonce is refused')
  t.equal(store.nonces.size, 1, 'and not recorded twice')

  const tampered = signRequest({ method: 'GET', url: `https://${HOST}/user/other`, accessToken, macKey })
  await t.rejects(async () => await verifier.verify({ method: 'GET', host: HOST, path: '/user/profile', query: 'fields=name', authorization: tampered }), { kind: 'accessDenied', message: DENIALS.macMismatch.description, reason: DENIALS.macMismatch.reason }, 'a signature over another path is refused')
  t.equal(store.nonces.size, 1, 'before its nonce is written')
})

t.test('on a route with a quota the nonce is counted through the fake, and refused over the limit', async (t) => {
  const { store, verifier, accessToken, macKey } = setup(new FakeQuotaStore())
  const quota = { route: '/user/profile', perMinute: 1 }
  const sign = (): string => signRequest({ method: 'GET', url: `https://${HOST}/user/profile`, accessToken, macKey })

  const first = new QuotaReading(quota)
  t.equal((await verifier.verify({ method: 'GET', host: HOST, path: '/user/profile', query: '', authorization: sign(), quota: first })).clientId, 'client-1')
  t.equal(first.used, 1, 'counted')

  const second = new QuotaReading(quota)
  const over = await (async () => await verifier.verify({ method: 'GET', host: HOST, path: '/user/profile', query: '', authorization: sign(), quota: second }))().catch((error: unknown) => error)
  t.ok(errors.quotaExceeded.is(over), 'over the limit: 429')
  t.equal(store.nonces.size, 1, 'the refused request\'s nonce is left unspent')
})

t.test('a verifier given no quotas refuses to guess a quota: an internal error, no nonce spent', async (t) => {
  const { store, verifier, accessToken, macKey } = setup(new FakeStore())
  const authorization = signRequest({ method: 'GET', url: `https://${HOST}/user/profile`, accessToken, macKey })
  await t.rejects(async () => await verifier.verify({ method: 'GET', host: HOST, path: '/user/profile', query: '', authorization, quota: new QuotaReading({ route: '/user/profile', perMinute: 1 }) }), /needs a verifier with quotas/)
  t.equal(store.nonces.size, 0)
})
