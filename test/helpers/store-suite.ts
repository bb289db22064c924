import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import {
  deriveOpenId, hashSecret, mintCode, mintMacKey, mintToken, newClientId, newGrantId, openMacKey,
  randomBase64Url, sealMacKey
} from '../../plugin/access/credentials.ts'
import type { ClientRecord, CodeRecord, DeviceCodeRecord, NonceUse, Store, TokenRecords, UserRecord } from '../../plugin/store/store.ts'
import { NonceKeys } from '../../plugin/store/nonce-key.ts'

// One suite for every Store implementation: each case gets a fresh store from `makeStore`.

/**
 * A case's store, and how the case lets time pass for it: a real sleep where the TTLs are Redis's,
 * a step of the store's own clock for the embedded store (no sleeping against in-process state).
 */
export interface SuiteStore {
  store: Store
  pass: (ms: number) => Promise<void>
}

export type MakeStore = (t: Test) => Promise<SuiteStore>

export const REDIRECT_URI = 'https://app.example.com/callback'
/** The secret codes and tokens are minted (tagged) under, and openIds derived from. */
export const SECRET = randomBase64Url(32)
const ACCESS_TTL = 3600
const REFRESH_TTL = 86400

export function newClient (): { record: ClientRecord, secret: string } {
  const secret = randomBase64Url(32)
  const record: ClientRecord = {
    id: newClientId(),
    name: 'Suite App',
    secretHash: hashSecret(secret),
    redirectUris: [REDIRECT_URI],
    scopes: ['1', '3', '4'],
    responseTypes: ['code', 'token'],
    grantTypes: ['authorization_code', 'refresh_token', 'implicit'],
    requirePkce: false,
    accessTokenTtl: 600,
    createdAt: Date.now()
  }
  return { record, secret }
}

export function newUser (username = `user-${randomBase64Url(6)}`): { record: UserRecord, password: string } {
  const password = randomBase64Url(12)
  return { record: { id: randomBase64Url(12), username, passwordHash: hashSecret(password), createdAt: Date.now() }, password }
}

const nonceKeys = new NonceKeys(SECRET)

/** A nonce as the verifier hands it to `useNonce`: of this minute unless told, kept `ttlSeconds`. */
export function nonceUse (tokenHash: string, nonce: string, { ttlSeconds = 60, minute = Math.floor(Date.now() / 60_000) } = {}): NonceUse {
  return nonceKeys.use(tokenHash, nonce, minute, ttlSeconds)
}

export interface IssuedCode { grantId: string, code: string, hash: string, record: CodeRecord }

export function newCode (grantId = newGrantId(), clientId = newClientId(), userId = 'u1', ttlSeconds = 60): IssuedCode {
  const code = mintCode(SECRET, grantId)
  const record: CodeRecord = { grantId, clientId, userId, redirectUri: REDIRECT_URI, scope: ['1', '3'], codeChallenge: randomBase64Url(32), expiresAt: Date.now() + ttlSeconds * 1000 }
  return { grantId, code, hash: hashSecret(code), record }
}

export interface Issued { grantId: string, access: string, accessHash: string, macKey: string, refresh?: string, refreshHash?: string, set: TokenRecords }

/** Tokens as the token endpoint builds them: an access token with a sealed mac_key, maybe a refresh token. */
export function issue (grantId: string, { clientId = newClientId(), userId = 'u1', refresh = true, accessTtl = ACCESS_TTL, refreshTtl = REFRESH_TTL } = {}): Issued {
  const access = mintToken(SECRET, grantId)
  const accessHash = hashSecret(access)
  const macKey = mintMacKey()
  const openId = deriveOpenId(SECRET, clientId, userId)
  const record = { grantId, clientId, userId, openId, scope: ['1', '3'], macKeySealed: sealMacKey(access, macKey), expiresAt: Date.now() + accessTtl * 1000 }
  const set: TokenRecords = { grantId, access: { hash: accessHash, record } }
  if (!refresh) return { grantId, access, accessHash, macKey, set }
  const token = mintToken(SECRET, grantId)
  set.refresh = {
    hash: hashSecret(token),
    record: { grantId, clientId, userId, redirectUri: REDIRECT_URI, scope: ['1', '3'], accessTokenHash: accessHash, expiresAt: Date.now() + refreshTtl * 1000 }
  }
  return { grantId, access, accessHash, macKey, refresh: token, refreshHash: set.refresh.hash, set }
}

/** Collects what a store's revocation listeners hear. */
export class Heard {
  readonly batches: string[][] = []
  /** How many times the store said revocations may have been missed (null). */
  resets = 0

  /** Resolves once the store says the listener receives revocations. */
  readonly subscribed: Promise<void>

  constructor (store: Store) {
    this.subscribed = store.onRevocation((hashes) => {
      if (hashes === null) this.resets++
      else this.batches.push(hashes)
    })
  }

  has (hash: string): boolean { return this.batches.some((batch) => batch.includes(hash)) }

  async waitFor (hash: string, timeoutMs = 1000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    while (!this.has(hash) && Date.now() < deadline) await sleep(5)
    return this.has(hash)
  }

  /** Revokes throwaway grants through `via` until one is heard, i.e. the listener is live. */
  async ready (via: Store, timeoutMs = 5000): Promise<boolean> {
    await this.subscribed
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const probe = issue(newGrantId(), { refresh: false })
      await via.saveTokens(probe.set)
      await via.revokeGrant(probe.grantId)
      if (await this.waitFor(probe.accessHash, 100)) return true
    }
    return false
  }
}

/** A listener on `store`'s revocations, asserted live before the case goes on. */
async function liveListener (t: Test, store: Store): Promise<Heard> {
  const heard = new Heard(store)
  t.ok(await heard.ready(store), 'listener live')
  return heard
}

const byId = (a: ClientRecord, b: ClientRecord): number => a.id.localeCompare(b.id)

/** Asserts that no token of `issued` can be read any more. */
async function gone (t: Test, store: Store, issued: Issued, what: string): Promise<void> {
  t.equal(await store.getAccessToken(issued.accessHash, issued.grantId), undefined, `${what}: access token gone`)
  if (issued.refreshHash === undefined) return
  t.equal(await store.getRefreshToken(issued.refreshHash, issued.grantId), undefined, `${what}: refresh token gone`)
}

export function storeSuite (t: Test, makeStore: MakeStore): void {
  const test = (name: string, fn: (t: Test, store: Store, pass: SuiteStore['pass']) => Promise<void>): void => {
    t.test(name, async (t) => {
      const { store, pass } = await makeStore(t)
      await fn(t, store, pass)
    })
  }

  test('clients: save, get, list, update, remove', async (t, store) => {
    const [a, b] = [newClient(), newClient()]
    await store.saveClient(a.record)
    await store.saveClient(b.record)
    t.strictSame(await store.getClient(a.record.id), a.record)
    t.equal(await store.getClient('1000000000000000000'), undefined, 'unknown client')
    // Redis lists by id, memory by insertion: the order is not part of the contract.
    t.strictSame((await store.listClients()).sort(byId), [a.record, b.record].sort(byId))
    await store.saveClient({ ...a.record, name: 'Renamed' })
    t.equal((await store.getClient(a.record.id))!.name, 'Renamed', 'saving again updates')
    t.equal((await store.listClients()).length, 2, 'no duplicate after an update')
    t.equal(await store.removeClient(a.record.id), true)
    t.equal(await store.getClient(a.record.id), undefined)
    t.strictSame(await store.listClients(), [b.record])
    t.equal(await store.removeClient(a.record.id), false, 'already removed')
    t.equal(await store.removeClient('1000000000000000000'), false, 'never existed')
  })

  test('clients: a record saved before grant types reads with those its response types allowed', async (t, store) => {
    const { grantTypes: _none, ...old } = newClient().record
    const codeOnly = { ...newClient().record, responseTypes: ['code' as const] }
    const { grantTypes: _also, ...oldCodeOnly } = codeOnly
    await store.saveClient(old as ClientRecord)
    await store.saveClient(oldCodeOnly as ClientRecord)
    t.strictSame((await store.getClient(old.id))?.grantTypes, ['authorization_code', 'refresh_token', 'implicit'], 'code and token: the code grant, its refreshes, the implicit grant')
    t.strictSame((await store.getClient(codeOnly.id))?.grantTypes, ['authorization_code', 'refresh_token'], 'code alone')
    t.strictSame((await store.listClients()).map((client) => client.grantTypes).sort(), [['authorization_code', 'refresh_token'], ['authorization_code', 'refresh_token', 'implicit']], 'listed alike')
    t.strictSame((await store.rotateClientSecret(codeOnly.id, 'h', Date.now()))?.grantTypes, ['authorization_code', 'refresh_token'], 'rotated alike')
    const updated = await store.updateClient(old.id, { grantTypes: ['implicit'], responseTypes: ['token'] })
    t.strictSame([updated?.grantTypes, updated?.responseTypes], [['implicit'], ['token']], 'an update replaces them')
    t.strictSame(await store.getClient(old.id), updated, 'as stored')
  })

  test('registration tokens: used up, expired, revoked; each use taken once', async (t, store) => {
    const now = Date.now()
    const token = (id: string, uses: number, expiresAt = now + 60_000) => ({ id, hash: `h-${id}-${randomBase64Url(6)}`, uses, usesLeft: uses, expiresAt, createdAt: now })
    const [once, twice, soon, revoked] = [token('once', 1), token('twice', 2), token('soon', 5, now + 1000), token('revoked', 3)]
    for (const one of [once, twice, soon, revoked]) await store.saveRegistrationToken(one)
    t.strictSame((await store.listRegistrationTokens()).map((one) => one.id).sort(), ['once', 'revoked', 'soon', 'twice'])
    t.equal(await store.useRegistrationToken(once.hash, now), 'once')
    t.equal(await store.useRegistrationToken(once.hash, now), undefined, 'used up')
    const both = await Promise.all([store.useRegistrationToken(twice.hash, now), store.useRegistrationToken(twice.hash, now), store.useRegistrationToken(twice.hash, now)])
    t.strictSame(both.filter((id) => id !== undefined), ['twice', 'twice'], 'three at once: two uses, no more')
    t.equal(await store.useRegistrationToken(soon.hash, now + 1000), undefined, 'expired by the clock given')
    t.equal(await store.useRegistrationToken('unknown', now), undefined, 'unknown')
    t.equal(await store.revokeRegistrationToken('revoked'), true)
    t.equal(await store.revokeRegistrationToken('revoked'), false, 'already revoked')
    t.equal(await store.useRegistrationToken(revoked.hash, now), undefined, 'revoked')
    const listed = await store.listRegistrationTokens()
    t.strictSame(listed.map((one) => [one.id, one.usesLeft, one.uses]), [['soon', 5, 5]], 'only the live one is listed')
    t.strictSame(listed[0], soon, 'as saved')
    const past = token('past', 1, Date.now() - 1)
    await store.saveRegistrationToken(past)
    t.strictSame((await store.listRegistrationTokens()).map((one) => one.id), ['soon'], 'one saved expired is never listed')
    t.equal(await store.revokeRegistrationToken('past'), false)
  })

  test('clients: a secret rotation keeps the previous hash until a time, atomically', async (t, store) => {
    const { record } = newClient()
    await store.saveClient(record)
    const until = Date.now() + 60_000
    const rotated = await store.rotateClientSecret(record.id, 'new-hash', until)
    t.strictSame(rotated, { ...record, secretHash: 'new-hash', previousSecretHash: record.secretHash, previousSecretUntil: until })
    t.strictSame(await store.getClient(record.id), rotated, 'as stored')
    await Promise.all([store.rotateClientSecret(record.id, 'a', until), store.rotateClientSecret(record.id, 'b', until)])
    const after = await store.getClient(record.id)
    t.ok(after!.secretHash !== after!.previousSecretHash && ['a', 'b'].includes(after!.previousSecretHash!), 'two rotations at once: one follows the other')
    t.equal(await store.rotateClientSecret('1000000000000000000', 'x', until), undefined, 'no such client')
  })

  test('clients: the origin index follows registration, update and removal', async (t, store) => {
    const origins = async (origin: string): Promise<string[]> => (await store.clientsOfOrigin(origin)).map((one) => `${one.public ? 'p' : 'c'}:${one.clientId}`).sort()
    const { record: confidential } = newClient()
    const spa: ClientRecord = { ...newClient().record, secretHash: '', public: true, redirectUris: ['http://127.0.0.1:5000/cb', 'https://spa.example/cb'], allowedOrigins: ['https://other.example'] }
    await store.saveClient(confidential)
    await store.saveClient(spa)
    t.strictSame(await origins('https://app.example.com'), [`c:${confidential.id}`], 'a redirect URI\'s origin')
    t.strictSame(await origins('http://127.0.0.1:5000'), [`p:${spa.id}`], 'with its port, marked public')
    t.strictSame(await origins('https://other.example'), [`p:${spa.id}`], 'an allowed origin')
    t.strictSame(await origins('https://nobody.example'), [], 'an origin no client has')

    await store.rotateClientSecret(confidential.id, 'rotated', Date.now() + 60_000)
    const updated = await store.updateClient(confidential.id, { allowedOrigins: ['https://other.example'], responseTypes: ['code'] })
    t.equal(updated?.secretHash, 'rotated', 'the secret is left as it is')
    t.strictSame(updated?.responseTypes, ['code'])
    t.strictSame(await store.getClient(confidential.id), updated, 'as stored')
    t.strictSame(await origins('https://other.example'), [`c:${confidential.id}`, `p:${spa.id}`].sort(), 'both clients')

    const moved = await store.updateClient(spa.id, { redirectUris: ['https://spa.example/cb'], allowedOrigins: [] })
    t.equal(moved?.allowedOrigins, undefined, 'an empty list removes them')
    t.equal(moved?.public, true, 'still public')
    t.strictSame(await origins('http://127.0.0.1:5000'), [], 'an origin no longer registered is gone')
    t.strictSame(await origins('https://other.example'), [`c:${confidential.id}`])
    t.strictSame(await origins('https://spa.example'), [`p:${spa.id}`])
    t.equal(await store.updateClient('1000000000000000000', { allowedOrigins: [] }), undefined, 'no such client')

    await store.removeClient(spa.id)
    t.strictSame(await origins('https://spa.example'), [], 'removed with the client')
  })

  test('removing a client revokes the grants opened for it', async (t, store) => {
    const heard = await liveListener(t, store)
    const { record: client } = newClient()
    await store.saveClient(client)
    const [g1, g2, other] = [newGrantId(), newGrantId(), newGrantId()]
    const until = Date.now() + 3_600_000
    await store.trackGrant(client.id, g1, until, 'user-1')
    await store.trackGrant(client.id, g2, until, 'user-1')
    await store.trackGrant('1000000000000000001', other, until, 'user-1')
    const code = newCode(g1, client.id)
    await store.saveCode(code.hash, code.record)
    const [i1, i2, i3] = [issue(g1, { clientId: client.id }), issue(g2, { clientId: client.id, refresh: false }), issue(other)]
    for (const issued of [i1, i2, i3]) await store.saveTokens(issued.set)

    t.equal(await store.removeClient(client.id), true)
    await gone(t, store, i1, 'grant 1')
    await gone(t, store, i2, 'grant 2')
    t.equal(await store.getCode(code.hash, g1), undefined)
    t.ok(await heard.waitFor(i1.accessHash), 'listener heard grant 1')
    t.ok(await heard.waitFor(i2.accessHash), 'listener heard grant 2')
    t.strictSame(await store.getAccessToken(i3.accessHash, other), i3.set.access.record, "another client's grant lives on")
    t.notOk(heard.has(i3.accessHash))
  })

  test('users: usernames are unique', async (t, store) => {
    const alice = newUser()
    t.equal(await store.createUser(alice.record), true)
    t.equal(await store.createUser(newUser(alice.record.username).record), false, 'username taken')
    t.strictSame(await store.getUserByName(alice.record.username), alice.record, 'the first one stays')
    t.equal(await store.getUserByName('nobody-' + randomBase64Url(6)), undefined)
    t.equal(await store.createUser(newUser().record), true, 'another name is free')
  })

  test('consent: a union without duplicates', async (t, store) => {
    const [userId, clientId] = ['u-' + randomBase64Url(6), newClientId()]
    t.strictSame(await store.getConsent(userId, clientId), [])
    await store.addConsent(userId, clientId, ['1', '3'])
    await store.addConsent(userId, clientId, ['3', '4', '4'])
    t.strictSame((await store.getConsent(userId, clientId)).sort(), ['1', '3', '4'])
    t.strictSame(await store.getConsent(userId, newClientId()), [], 'per client')
    t.strictSame(await store.getConsent('someone-else', clientId), [], 'per user')
    const empty = await store.addConsent(userId, clientId, []).then(() => 'resolved', (error: Error) => error.message)
    t.equal(empty, 'resolved', 'adding no scopes is a no-op')
    t.strictSame((await store.getConsent(userId, clientId)).sort(), ['1', '3', '4'])
  })

  test('consent: listed per user with its time, and forgotten per client', async (t, store) => {
    const [userId, first, second] = ['u-' + randomBase64Url(6), newClientId(), newClientId()]
    t.strictSame(await store.listConsents(userId), [], 'none yet')
    const before = Date.now()
    await store.addConsent(userId, first, ['3', '1'])
    await store.addConsent(userId, second, ['4'])
    await store.addConsent('someone-else', first, ['1'])
    const listed = await store.listConsents(userId)
    t.strictSame(listed.map(({ clientId, scopes }) => ({ clientId, scopes })).sort((a, b) => a.clientId.localeCompare(b.clientId)),
      [{ clientId: first, scopes: ['1', '3'] }, { clientId: second, scopes: ['4'] }].sort((a, b) => a.clientId.localeCompare(b.clientId)))
    t.ok(listed.every(({ grantedAt }) => grantedAt >= before && grantedAt <= Date.now()), 'when, in ms')
    await store.forgetConsent(userId, first)
    t.strictSame(await store.getConsent(userId, first), [], 'the scopes are gone')
    t.strictSame((await store.listConsents(userId)).map(({ clientId }) => clientId), [second], 'and the index entry')
    t.strictSame(await store.getConsent('someone-else', first), ['1'], "another user's consent stays")
  })

  test('consent: counted per client, once per user, down when forgotten, gone with the client', async (t, store) => {
    const client = { id: newClientId(), name: 'Counted', secretHash: '', redirectUris: ['https://a.example/cb'], scopes: ['1'], responseTypes: ['code' as const], grantTypes: ['authorization_code' as const, 'refresh_token' as const], requirePkce: false, createdAt: Date.now() }
    await store.saveClient(client)
    const [alice, bob] = ['u-' + randomBase64Url(6), 'u-' + randomBase64Url(6)]
    t.equal(await store.countConsents(client.id), 0, 'none yet')
    await store.addConsent(alice, client.id, ['1'])
    await store.addConsent(alice, client.id, ['3'])
    await store.addConsent(bob, client.id, ['1'])
    await store.addConsent(bob, newClientId(), ['1'])
    t.equal(await store.countConsents(client.id), 2, 'each user once, whatever they consented to')
    await store.forgetConsent(alice, client.id)
    await store.forgetConsent(alice, client.id)
    t.equal(await store.countConsents(client.id), 1, 'down by one, once')
    t.ok(await store.removeClient(client.id))
    t.equal(await store.countConsents(client.id), 0, 'gone with the client')
  })

  test("a user's grants: listed by client until their time, forgotten one by one", async (t, store, pass) => {
    const [userId, clientA, clientB] = ['u-' + randomBase64Url(6), newClientId(), newClientId()]
    const [g1, g2, g3] = [newGrantId(), newGrantId(), newGrantId()]
    const until = Date.now() + 3_600_000
    await store.trackGrant(clientA, g1, until, userId)
    await store.trackGrant(clientA, g2, Date.now() + 1000, userId)
    await store.trackGrant(clientA, g2, until, userId)
    await store.trackGrant(clientB, g3, until, userId)
    await store.trackGrant(clientB, newGrantId(), until, 'someone-else')
    const byId = (grants: Array<{ grantId: string }>) => grants.map(({ grantId }) => grantId).sort()
    const listed = await store.listUserGrants(userId)
    t.strictSame(byId(listed), [g1, g2, g3].sort())
    t.equal(listed.find(({ grantId }) => grantId === g2)?.until, until, 'a later call extends, never shortens')
    t.equal(listed.find(({ grantId }) => grantId === g3)?.clientId, clientB)
    await store.forgetUserGrant(userId, clientA, g1)
    t.strictSame(byId(await store.listUserGrants(userId)), [g2, g3].sort())
    await store.trackGrant(clientA, newGrantId(), Date.now() + 150, userId)
    await pass(300)
    t.strictSame(byId(await store.listUserGrants(userId)), [g2, g3].sort(), 'a grant past its time is not listed')
  })

  test('codes: redeemed once; a replay revokes the grant', async (t, store) => {
    const heard = await liveListener(t, store)
    const code = newCode()
    const { grantId } = code
    await store.saveCode(code.hash, code.record)
    t.strictSame(await store.getCode(code.hash, grantId), code.record)
    t.equal(await store.getCode(hashSecret(mintCode(SECRET, grantId)), grantId), undefined, 'unknown code')
    const unknown = issue(grantId)
    t.equal(await store.redeemCode(hashSecret(mintCode(SECRET, grantId)), unknown.set), 'missing')
    t.equal(await store.getAccessToken(unknown.accessHash, grantId), undefined, 'a missing code saves nothing')

    const first = issue(grantId)
    t.equal(await store.redeemCode(code.hash, first.set), 'ok')
    t.strictSame(await store.getCode(code.hash, grantId), { ...code.record, used: true })
    const access = await store.getAccessToken(first.accessHash, grantId)
    t.strictSame(access, first.set.access.record)
    t.equal(openMacKey(first.access, access!.macKeySealed).toString('utf8'), first.macKey, 'the mac_key opens with the token')
    t.strictSame(await store.getRefreshToken(first.refreshHash!, grantId), first.set.refresh!.record)

    const second = issue(grantId)
    t.equal(await store.redeemCode(code.hash, second.set), 'replayed')
    await gone(t, store, first, 'issued from the code')
    await gone(t, store, second, 'offered by the replay')
    t.equal(await store.getCode(code.hash, grantId), undefined, 'the code went with its grant')
    t.ok(await heard.waitFor(first.accessHash), 'listener heard the access token')
    t.equal(await store.redeemCode(code.hash, issue(grantId).set), 'missing', 'then it is unknown')
  })

  test('codes: of 50 concurrent redemptions exactly one wins', async (t, store) => {
    const code = newCode()
    await store.saveCode(code.hash, code.record)
    const attempts = Array.from({ length: 50 }, () => issue(code.grantId))
    const results = await Promise.all(attempts.map((a) => store.redeemCode(code.hash, a.set)))
    // The second attempt replays and revokes the grant, code included: the later ones find nothing.
    t.strictSame(results.slice(0, 2), ['ok', 'replayed'])
    t.equal(results.filter((r) => r === 'missing').length, 48, 'the other 48 are missing')
    const left = await Promise.all(attempts.map((a) => store.getAccessToken(a.accessHash, code.grantId)))
    t.equal(left.filter((record) => record !== undefined).length, 0, 'no token of the grant survives')
  })

  test('records expire after their ttl', async (t, store, pass) => {
    const code = newCode(undefined, undefined, undefined, 1)
    await store.saveCode(code.hash, code.record)
    const redeemed = newCode()
    await store.saveCode(redeemed.hash, redeemed.record)
    const short = issue(redeemed.grantId, { accessTtl: 1, refreshTtl: 1 })
    t.equal(await store.redeemCode(redeemed.hash, short.set), 'ok')
    const long = issue(redeemed.grantId, { refresh: false })
    await store.saveTokens(long.set)
    t.ok(await store.getCode(code.hash, code.grantId), 'alive at first')
    t.ok(await store.getAccessToken(short.accessHash, short.grantId), 'alive at first')
    await pass(1200)
    // Before anything reads the expired token (a read drops it from the memory store).
    t.strictSame(await store.revokeGrant(redeemed.grantId), [long.accessHash], 'an expired token is not reported revoked')
    t.equal(await store.getCode(code.hash, code.grantId), undefined, 'code expired')
    t.equal(await store.redeemCode(code.hash, issue(code.grantId).set), 'missing')
    await gone(t, store, short, 'expired')
    t.equal(await store.rotateRefreshToken(short.refreshHash!, issue(short.grantId).set), 'missing')
  })

  test('implicit grant: saveTokens saves an access token only', async (t, store) => {
    const issued = issue(newGrantId(), { refresh: false })
    await store.saveTokens(issued.set)
    const access = await store.getAccessToken(issued.accessHash, issued.grantId)
    t.strictSame(access, issued.set.access.record)
    t.equal(openMacKey(issued.access, access!.macKeySealed).toString('utf8'), issued.macKey)
    t.equal(await store.getAccessToken(hashSecret(mintToken(SECRET, issued.grantId)), issued.grantId), undefined, 'unknown token')
  })

  test('refresh: rotated once; a replay revokes the whole grant', async (t, store) => {
    const heard = await liveListener(t, store)
    const code = newCode()
    const { grantId } = code
    await store.saveCode(code.hash, code.record)
    const first = issue(grantId)
    t.equal(await store.redeemCode(code.hash, first.set), 'ok')

    const second = issue(grantId)
    t.equal(await store.rotateRefreshToken(first.refreshHash!, second.set), 'ok')
    t.strictSame(await store.getRefreshToken(first.refreshHash!, grantId), { ...first.set.refresh!.record, spent: true })
    t.equal(await store.getAccessToken(first.accessHash, grantId), undefined, 'the sibling access token is revoked')
    t.ok(await heard.waitFor(first.accessHash), '...and reported')
    t.strictSame(await store.getAccessToken(second.accessHash, grantId), second.set.access.record)
    t.strictSame(await store.getRefreshToken(second.refreshHash!, grantId), second.set.refresh!.record)

    const third = issue(grantId)
    t.equal(await store.rotateRefreshToken(first.refreshHash!, third.set), 'replayed')
    await gone(t, store, first, 'first')
    await gone(t, store, second, 'rotated')
    await gone(t, store, third, 'offered by the replay')
    t.equal(await store.getCode(code.hash, grantId), undefined, 'the code went too')
    t.ok(await heard.waitFor(second.accessHash), 'listener heard the new access token')
    t.equal(await store.rotateRefreshToken(second.refreshHash!, issue(grantId).set), 'missing')
    t.equal(await store.rotateRefreshToken(hashSecret(mintToken(SECRET, grantId)), issue(grantId).set), 'missing')
  })

  test('refresh with a rotation grace: a repeat within it gets the kept successor, after it the grant goes', async (t, store, pass) => {
    const grantId = newGrantId()
    const first = issue(grantId)
    await store.saveTokens(first.set)
    const second = issue(grantId)
    t.equal(await store.rotateRefreshToken(first.refreshHash!, second.set, { graceMs: 300, successor: 'sealed-second' }), 'ok')
    t.strictSame(await store.rotateRefreshToken(first.refreshHash!, issue(grantId).set, { graceMs: 300, successor: 'other' }), { successor: 'sealed-second' }, 'a repeat gets the first rotation\'s successor')
    t.strictSame(await store.getAccessToken(second.accessHash, grantId), second.set.access.record, 'and nothing is revoked')
    // Two repeats at once: both get it.
    const both = await Promise.all([1, 2].map(async () => await store.rotateRefreshToken(first.refreshHash!, issue(grantId).set, { graceMs: 300, successor: 'x' })))
    t.strictSame(both, [{ successor: 'sealed-second' }, { successor: 'sealed-second' }])
    await pass(350)
    t.equal(await store.rotateRefreshToken(first.refreshHash!, issue(grantId).set, { graceMs: 300, successor: 'late' }), 'replayed', 'after the grace, reuse is reuse')
    await gone(t, store, second, 'the successor')
    t.equal(await store.rotateRefreshToken(second.refreshHash!, issue(grantId).set), 'missing')
  })

  test('revokeGrant returns the revoked access hashes, once', async (t, store) => {
    const heard = await liveListener(t, store)
    const grantId = newGrantId()
    const [a, b] = [issue(grantId), issue(grantId, { refresh: false })]
    await store.saveTokens(a.set)
    await store.saveTokens(b.set)
    const bystander = issue(newGrantId())
    await store.saveTokens(bystander.set)
    t.strictSame((await store.revokeGrant(grantId)).sort(), [a.accessHash, b.accessHash].sort())
    await gone(t, store, a, 'a')
    await gone(t, store, b, 'b')
    t.ok(await heard.waitFor(a.accessHash) && await heard.waitFor(b.accessHash), 'listener heard both')
    t.strictSame(await store.revokeGrant(grantId), [], 'idempotent')
    t.strictSame(await store.revokeGrant(newGrantId()), [], 'unknown grant')
    t.ok(await store.getAccessToken(bystander.accessHash, bystander.grantId), 'other grants untouched')
  })

  test('a listener whose registration has resolved hears the very next revocation', async (t, store) => {
    const issued = issue(newGrantId(), { refresh: false })
    await store.saveTokens(issued.set)
    const heard = new Heard(store)
    await heard.subscribed
    t.strictSame(await store.revokeGrant(issued.grantId), [issued.accessHash])
    t.ok(await heard.waitFor(issued.accessHash, 1000), 'heard within 1 s')
  })

  test('nonces: once per token and minute, again once the minute\'s bucket has expired', async (t, store, pass) => {
    const [g1, g2] = [newGrantId(), newGrantId()]
    const [h1, h2] = [hashSecret(mintToken(SECRET, g1)), hashSecret(mintToken(SECRET, g2))]
    const minute = Math.floor(Date.now() / 60_000)
    const once = { ttlSeconds: 1, minute }
    t.equal(await store.useNonce(nonceUse(h1, `-83:${minute}`, once)), true, 'fresh')
    t.equal(await store.useNonce(nonceUse(h1, `-83:${minute}`, once)), false, 'replayed nonce')
    t.equal(await store.useNonce(nonceUse(h2, `-83:${minute}`, once)), true, 'per token')
    t.equal(await store.useNonce(nonceUse(h1, `84:${minute}`, once)), true, 'another nonce')
    t.equal(await store.useNonce(nonceUse(h1, `-83:${minute}`, { ttlSeconds: 60, minute: minute + 1 })), true, 'another minute is another bucket')
    t.equal(await store.useNonce(nonceUse(h1, `-83:${minute}`, { ttlSeconds: 60, minute: minute + 1 })), false)
    t.equal((await store.nonceStats()).held, 4, 'four nonces held')
    t.ok((await store.nonceStats()).bytes > 0, 'and they take memory')
    await pass(1200)
    t.equal(await store.useNonce(nonceUse(h1, `-83:${minute}`, once)), true, 'usable again once its bucket expired (the verifier refuses it as stale by then)')
    t.equal(await store.useNonce(nonceUse(h1, `-83:${minute}`, once)), false)
    t.equal(await store.useNonce(nonceUse(h1, `-83:${minute}`, { ttlSeconds: 60, minute: minute + 1 })), false, 'the later bucket is still there')
  })

  test('nonces: one turn\'s many checks answered each, in order', async (t, store) => {
    const hashes = Array.from({ length: 64 }, () => hashSecret(mintToken(SECRET, newGrantId())))
    const uses = hashes.flatMap((hash) => [nonceUse(hash, '1:a'), nonceUse(hash, '2:b')])
    t.same(await Promise.all(uses.map(async (use) => await store.useNonce(use))), uses.map(() => true), 'all fresh')
    const mixed = hashes.map((hash, i) => nonceUse(hash, i % 2 === 0 ? '1:a' : '3:c'))
    t.same(await Promise.all(mixed.map(async (use) => await store.useNonce(use))), hashes.map((_, i) => i % 2 === 1), 'replays refused, fresh ones accepted, each its own answer')
  })

  test('device codes: the user code leads to them once, polls judged and remembered, redeemed once', async (t, store) => {
    const grantId = newGrantId()
    const deviceHash = hashSecret(mintToken(SECRET, grantId))
    const clientId = newClientId()
    const record: DeviceCodeRecord = { grantId, clientId, scope: ['1', '3'], expiresAt: Date.now() + 60_000, interval: 5, status: 'pending' }
    t.equal(await store.saveDeviceCode(deviceHash, 'user-code-hash', record), true)
    t.equal(await store.saveDeviceCode(hashSecret(mintToken(SECRET, grantId)), 'user-code-hash', record), false, 'a user code leads to one live device code')
    const target = await store.findUserCode('user-code-hash')
    t.strictSame(target, { grantId, deviceCodeHash: deviceHash })
    t.equal(await store.findUserCode('another'), undefined)
    t.strictSame(await store.getDeviceCode(deviceHash, grantId), record)

    t.match(await store.pollDeviceCode(deviceHash, grantId, clientId, 1000), { state: 'pending', record: { interval: 5 } })
    t.match(await store.pollDeviceCode(deviceHash, grantId, clientId, 1000), { state: 'slow_down', record: { interval: 10 } }, 'too soon: the interval grows')
    t.ok((await store.getDeviceCode(deviceHash, grantId))!.lastPollAt! > 0, 'the last poll is kept')
    t.strictSame(await store.pollDeviceCode(deviceHash, grantId, newClientId(), 1000), { state: 'other_client' })
    t.strictSame(await store.pollDeviceCode(hashSecret('x'), grantId, clientId, 1000), { state: 'missing' })
    t.equal(await store.redeemDeviceCode(deviceHash, issue(grantId, { clientId }).set), 'undecided')

    t.equal(await store.decideDeviceCode(target!, 'user-code-hash', { userId: 'u1', approved: true }), 'ok')
    t.equal(await store.findUserCode('user-code-hash'), undefined, 'decided: the user code leads nowhere')
    t.equal(await store.decideDeviceCode(target!, 'user-code-hash', { userId: 'u2', approved: false }), 'decided', 'once')
    t.match(await store.pollDeviceCode(deviceHash, grantId, clientId, 60_000), { state: 'approved', record: { userId: 'u1' } }, 'a tolerance past the interval: no slow_down')

    const racing = [issue(grantId, { clientId }), issue(grantId, { clientId })]
    const results = await Promise.all(racing.map(async (issued) => await store.redeemDeviceCode(deviceHash, issued.set)))
    t.strictSame([...results].sort(), ['ok', 'spent'], 'two redemptions racing: one wins')
    const [winner, loser] = results[0] === 'ok' ? racing : [racing[1]!, racing[0]!]
    t.ok(await store.getAccessToken(winner!.accessHash, grantId), 'its tokens saved')
    t.equal(await store.getAccessToken(loser!.accessHash, grantId), undefined, 'the other\'s not')
    t.match(await store.pollDeviceCode(deviceHash, grantId, clientId, 60_000), { state: 'spent' })
  })

  test('device codes: denied, expired, kept past expiry for late polls', async (t, store, pass) => {
    const grantId = newGrantId()
    const deviceHash = hashSecret(mintToken(SECRET, grantId))
    const clientId = newClientId()
    await store.saveDeviceCode(deviceHash, 'denied-code', { grantId, clientId, scope: ['1'], expiresAt: Date.now() + 60_000, interval: 5, status: 'pending' })
    t.equal(await store.decideDeviceCode((await store.findUserCode('denied-code'))!, 'denied-code', { userId: 'u1', approved: false }), 'ok')
    t.match(await store.pollDeviceCode(deviceHash, grantId, clientId, 1000), { state: 'denied' })

    const lateId = newGrantId()
    const lateHash = hashSecret(mintToken(SECRET, lateId))
    await store.saveDeviceCode(lateHash, 'late-code', { grantId: lateId, clientId, scope: ['1'], expiresAt: Date.now() + 1000, interval: 5, status: 'pending' })
    const target = (await store.findUserCode('late-code'))!
    await pass(1200)
    t.equal(await store.findUserCode('late-code'), undefined, 'an expired user code leads nowhere')
    t.equal(await store.decideDeviceCode(target, 'late-code', { userId: 'u1', approved: true }), 'expired')
    t.match(await store.pollDeviceCode(lateHash, lateId, clientId, 1000), { state: 'expired' }, 'a late poll learns it expired')
  })

  test('serverSecret keeps the first proposal', async (t, store) => {
    const first = randomBase64Url(32)
    t.equal(await store.serverSecret(first), first)
    t.equal(await store.serverSecret(randomBase64Url(32)), first)
    t.equal(await store.serverSecret(randomBase64Url(32)), first)
  })
}
