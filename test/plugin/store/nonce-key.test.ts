// The nonce's keyed hash as the stores read it: a latin1 string, one character a byte, read as
// Node reads a Buffer of the same bytes (words little-endian).
import { createHash, hash, randomBytes } from 'node:crypto'
import t from 'tap'
import { hashSecret } from '../../../plugin/access/credentials.ts'
import { keyByte, keyWord, NonceKeys } from '../../../plugin/store/nonce-key.ts'

t.test('the key is SHA-256 over secret, token hash and nonce, one character a byte', async (t) => {
  const keys = new NonceKeys('the secret')
  const use = keys.use('token-hash', 'nonce:29000000', 29_000_000, 120)
  const expected = createHash('sha256').update('macgate nonce\nthe secret\ntoken-hash\nnonce:29000000').digest()
  t.equal(use.key.length, 32)
  t.same(Buffer.from(use.key, 'latin1'), expected, 'the digest\'s own bytes')
  t.same({ minute: use.minute, ttlSeconds: use.ttlSeconds }, { minute: 29_000_000, ttlSeconds: 120 })
  const others = new NonceKeys('another secret')
  t.not(others.use('token-hash', 'nonce:29000000', 29_000_000, 120).key, use.key, 'another secret, another key')
  t.not(keys.use('token-hasi', 'nonce:29000000', 29_000_000, 120).key, use.key, 'another token, another key')
})

t.test('the same key as the text of its input hashed, whatever the nonce holds, and however long', async (t) => {
  const secret = 'a secret with ünïcödé 🔑'
  const keys = new NonceKeys(secret)
  const tokenHash = hashSecret(randomBytes(32).toString('base64url'))
  // What the release before hashed: the input joined as text (UTF-8, a lone surrogate as U+FFFD).
  const asText = (nonce: string): string => hash('sha256', `macgate nonce\n${secret}\n${tokenHash}\n${nonce}`, 'binary')
  const nonces = ['', 'r:1', 'abc:29000000', 'é:29000000', 'x€y:1', '😀:1', '\ud800:1', 'a\udc00b:1', '\u007f\u0080:1', 'x'.repeat(64) + ':29000000', '€'.repeat(400), 'y'.repeat(5000)]
  // Lengths back and forth, so that a view kept for one length is met again by another input.
  for (const nonce of [...nonces, ...[...nonces].reverse()]) t.equal(keys.use(tokenHash, nonce, 1, 60).key, asText(nonce), `nonce of ${nonce.length} characters`)
  t.equal(keys.use(tokenHash, 'r:1', 1, 60).key, keys.use(tokenHash, 'r:1', 1, 60).key, 'the same input, the same key')
})

t.test('bytes and words read as from a Buffer', async (t) => {
  const edges = ['00'.repeat(10), 'ff'.repeat(10), '0000000000000080ffff', 'ffffffffffffff7f0102', '0100000000000080aa55', 'ffffffff00000000', '00000000ffffffff']
  const keys = [...edges.map((hex) => Buffer.from(hex.padEnd(20, '0'), 'hex')), ...Array.from({ length: 2000 }, () => randomBytes(10))]
  for (const bytes of keys) {
    const key = bytes.toString('latin1')
    const wrong: string[] = []
    if (keyWord(key, 0) !== bytes.readUInt32LE(0) || keyWord(key, 4) !== bytes.readUInt32LE(4)) wrong.push('words')
    if (keyByte(key, 8) !== bytes[8] || keyByte(key, 9) !== bytes[9]) wrong.push('bytes')
    if (wrong.length > 0) t.fail(`${bytes.toString('hex')}: ${wrong.join(', ')}`)
  }
  t.pass(`${keys.length} keys, the extremes among them, read alike`)
})
