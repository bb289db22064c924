import t from 'tap'
import { constantTimeEqual, sameCharactersAt } from '../../../plugin/access/constant-time.ts'

t.test('constantTimeEqual', async (t) => {
  t.equal(constantTimeEqual('abc=', 'abc='), true)
  t.equal(constantTimeEqual('abc=', 'abd='), false, 'same length, different content')
  t.equal(constantTimeEqual('abc=', 'abc'), false, 'different length does not throw')
  t.equal(constantTimeEqual('abc=', ''), false)
  t.equal(constantTimeEqual('', ''), true)
  t.equal(constantTimeEqual('é', 'e'), false, 'compares code units, not what they look like')
})

t.test('sameCharactersAt: a range of one text against a range of another', async (t) => {
  const tag = 'Q2x1c3RlcnNfYXJl'
  const value = `grant.random${tag}`
  t.equal(sameCharactersAt(`${tag}restOfTheDigest`, 0, value, value.length - tag.length, tag.length), true, 'the start of one, the end of the other')
  for (let i = 0; i < tag.length; i++) {
    const changed = tag.slice(0, i) + (tag[i] === 'A' ? 'B' : 'A') + tag.slice(i + 1)
    t.equal(sameCharactersAt(changed, 0, value, value.length - tag.length, tag.length), false, `character ${i} differs`)
  }
  t.equal(sameCharactersAt('abc', 1, 'xbcx', 1, 2), true, 'only the range is read')
  t.equal(sameCharactersAt('abc', 0, 'xyz', 0, 0), true, 'an empty range')
})
