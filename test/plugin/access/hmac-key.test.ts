import { createCipheriv, createHmac, hash as digestOf, randomBytes } from 'node:crypto'
import t from 'tap'
import { HmacKey, hmacOnce, hmacOnceByKeyDigest, type HmacHash } from '../../../plugin/access/hmac-key.ts'
import { deriveOpenId, grantIdOf, hashSecret, newGrantId, openMacKey } from '../../../plugin/access/credentials.ts'

const fromHex = (hex: string): Buffer => Buffer.from(hex, 'hex')

// RFC 2202 (HMAC-SHA1) and RFC 4231 (HMAC-SHA256): keys shorter than, equal to and longer than a block.
const VECTORS: Array<{ hash: HmacHash, key: Buffer, data: string, hex: string }> = [
  { hash: 'sha1', key: fromHex('0b'.repeat(20)), data: 'Hi There', hex: 'b617318655057264e28bc0b6fb378c8ef146be00' },
  { hash: 'sha1', key: Buffer.from('Jefe'), data: 'what do ya want for nothing?', hex: 'effcdf6ae5eb2fa2d27416d5f184df9c259a7c79' },
  { hash: 'sha1', key: fromHex('aa'.repeat(80)), data: 'Test Using Larger Than Block-Size Key - Hash Key First', hex: 'aa4ae5e15272d00e95705637ce8a3b55ed402112' },
  { hash: 'sha1', key: fromHex('aa'.repeat(80)), data: 'Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data', hex: 'e8e99d0f45237d786d6bbaa7965c7808bbff1a91' },
  { hash: 'sha256', key: fromHex('0b'.repeat(20)), data: 'Hi There', hex: 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7' },
  { hash: 'sha256', key: Buffer.from('Jefe'), data: 'what do ya want for nothing?', hex: '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843' },
  { hash: 'sha256', key: fromHex('aa'.repeat(131)), data: 'Test Using Larger Than Block-Size Key - Hash Key First', hex: '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54' }
]

t.test('the RFC test vectors, prepared once and used once', async (t) => {
  for (const { hash, key, data, hex } of VECTORS) {
    const expected = Buffer.from(hex, 'hex')
    const prepared = new HmacKey(hash, key)
    t.equal(prepared.digest(data, 'base64'), expected.toString('base64'), `${hash}, a ${key.length}-byte key: prepared`)
    t.equal(prepared.digest(data, 'base64'), expected.toString('base64'), `${hash}, a ${key.length}-byte key: the same key again`)
    t.same(hmacOnce(hash, key, data), expected, `${hash}, a ${key.length}-byte key: once`)
  }
})

t.test('the bytes of createHmac for text keys and messages of every length, ASCII and not', async (t) => {
  const texts = ['', 'a', 'é', '中文', '😀']
  for (const length of [0, 1, 20, 55, 56, 63, 64, 65, 119, 200, 1365, 1366, 4032, 5000]) texts.push('x'.repeat(length), '中'.repeat(length))
  for (const hash of ['sha1', 'sha256'] as const) {
    for (const key of ['', 'k', 'kéy', 'a'.repeat(64), 'b'.repeat(65), '中'.repeat(30)]) {
      const prepared = new HmacKey(hash, key)
      const mismatches = texts.filter((text) => prepared.digest(text, 'base64url') !== createHmac(hash, key).update(text, 'utf8').digest('base64url') ||
        !hmacOnce(hash, key, text).equals(createHmac(hash, key).update(text, 'utf8').digest()))
      t.same(mismatches.map((text) => text.length), [], `${hash}, key of ${key.length} characters`)
      // Given the key's digest, as a token cache miss gives its token's hash; or a digest that is not one (another hash's length).
      const other = hash === 'sha1' ? 'sha256' : 'sha1'
      const byDigest = texts.filter((text) => !hmacOnceByKeyDigest(hash, key, digestOf(hash, key, 'base64url'), text).equals(createHmac(hash, key).update(text, 'utf8').digest()) ||
        !hmacOnceByKeyDigest(hash, key, digestOf(other, key, 'base64url'), text).equals(createHmac(hash, key).update(text, 'utf8').digest()))
      t.same(byDigest.map((text) => text.length), [], `${hash}, key of ${key.length} characters, by its digest`)
    }
  }
})

t.test('two keys in turn: neither sees the other\'s pads or digest', async (t) => {
  const one = new HmacKey('sha1', 'one')
  const two = new HmacKey('sha256', 'two')
  for (let i = 0; i < 3; i++) {
    t.equal(one.digest(`m${i}`, 'base64'), createHmac('sha1', 'one').update(`m${i}`).digest('base64'))
    t.same(hmacOnce('sha256', 'three', `m${i}`), createHmac('sha256', 'three').update(`m${i}`).digest())
    t.equal(two.digest(`m${i}`, 'base64'), createHmac('sha256', 'two').update(`m${i}`).digest('base64'))
  }
})

t.test('what was issued under createHmac still checks and opens', async (t) => {
  const secret = 'the server secret of an earlier release'
  const body = `${newGrantId()}.${randomBytes(32).toString('base64url')}`
  const token = body + createHmac('sha256', secret).update(body).digest('base64url').slice(0, 16)
  t.equal(grantIdOf(secret, token), body.slice(0, 16), 'a token tagged by createHmac: ours')
  t.equal(deriveOpenId(secret, '2882303761517520000', 'user-1'), createHmac('sha256', secret).update('2882303761517520000:user-1').digest('base64url'), 'an open id: the one createHmac gave, which clients keep')
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', createHmac('sha256', token).update('macgate mac_key seal').digest(), iv)
  const sealed = Buffer.concat([cipher.update('the mac_key', 'utf8'), cipher.final()])
  const macKeySealed = Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')
  t.equal(openMacKey(token, macKeySealed).toString('utf8'), 'the mac_key', 'a mac_key sealed under a createHmac key: opened')
  t.equal(openMacKey(token, macKeySealed, hashSecret(token)).toString('utf8'), 'the mac_key', 'and opened with the token\'s hash in its place (a cache miss)')
  t.throws(() => openMacKey(token, macKeySealed, hashSecret(`${token}x`)), 'another token\'s hash: not opened')
})
