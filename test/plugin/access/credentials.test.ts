import t from 'tap'
import { grantIdOf, hashSecret, mintCode, mintToken, newGrantId, secretMatches } from '../../../plugin/access/credentials.ts'

const SECRET = 'a server secret of the test, long enough'

/** The value with its character at `at` replaced by another of the same alphabet. */
function changedAt (value: string, at: number): string {
  return value.slice(0, at) + (value[at] === 'A' ? 'B' : 'A') + value.slice(at + 1)
}

t.test('grantIdOf: the grant id of a value this server minted, and nothing for a tag that is not its own', async (t) => {
  const grantId = newGrantId()
  for (const value of [mintToken(SECRET, grantId), mintCode(SECRET, grantId)]) {
    t.equal(grantIdOf(SECRET, value), grantId, 'minted here: its grant id')
    t.equal(grantIdOf(`${SECRET}!`, value), undefined, 'under another secret: no grant id')
    const tagAt = value.length - 16
    const refused = Array.from({ length: 16 }, (_, i) => grantIdOf(SECRET, changedAt(value, tagAt + i)))
    t.same(refused, Array(16).fill(undefined), 'any one character of the tag changed: refused')
    t.equal(grantIdOf(SECRET, changedAt(value, 20)), undefined, 'the random part changed under the tag: refused')
    t.equal(grantIdOf(SECRET, changedAt(value, 3)), undefined, 'the grant id changed under the tag: refused')
    t.equal(grantIdOf(SECRET, value.slice(0, -1)), undefined, 'a character short')
    t.equal(grantIdOf(SECRET, `${value}A`), undefined, 'a character over')
  }
})

t.test('secretMatches: the kept hash of exactly that secret', async (t) => {
  const secret = 'the client secret'
  const kept = hashSecret(secret)
  t.equal(secretMatches(secret, kept), true)
  t.equal(secretMatches('the client secreT', kept), false)
  t.equal(secretMatches('', kept), false)
  t.equal(secretMatches(secret, kept.slice(0, -1)), false, 'a hash of another length: false, not a throw')
})
