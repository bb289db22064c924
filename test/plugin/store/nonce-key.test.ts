// The nonce's keyed hash as the stores read it: a latin1 string, one character a byte, read as
// Node reads a Buffer of the same bytes (words little-endian).
import { createHash, randomBytes } from 'node:crypto'
import t from 'tap'
import { keyByte, keyWord, NonceKeys } from '../../../plugin/store/nonce-key.ts'

t.test('the key is SHA-256 over secret, token hash and nonce, one character a byte', async (t) => {
  const keys = new NonceKeys('the secret')
  const use = keys.use(keys.tokenPart('token-hash'), 'nonce:29000000', 29_000_000, 120)
  const expected = createHash('sha256').update('macgate nonce\nthe secret\ntoken-hash\nnonce:29000000').digest()
  t.equal(use.key.length, 32)
  t.same(Buffer.from(use.key, 'latin1'), expected, 'the digest\'s own bytes')
  t.same({ minute: use.minute, ttlSeconds: use.ttlSeconds }, { minute: 29_000_000, ttlSeconds: 120 })
  const others = new NonceKeys('another secret')
  t.not(others.use(others.tokenPart('token-hash'), 'nonce:29000000', 29_000_000, 120).key, use.key, 'another secret, another key')
  t.not(keys.use(keys.tokenPart('token-hasi'), 'nonce:29000000', 29_000_000, 120).key, use.key, 'another token, another key')
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
