// The token cache's scope sets: tokens of the same scopes share one frozen array, up to a bound;
// past it every scope is still right, a frozen copy of its own.
import t from 'tap'
import { MAX_SCOPE_SETS, ScopeSets } from '../../../plugin/mac/scope-sets.ts'

t.test('the same scopes in the same order share one frozen array; others do not', async (t) => {
  const sets = new ScopeSets()
  const first = sets.of(['1', '3'])
  t.equal(sets.of(['1', '3']), first, 'the same ids: the same array')
  t.same(first, ['1', '3'])
  t.ok(Object.isFrozen(first), 'frozen')
  t.not(sets.of(['3', '1']), first, 'another order is another set (the header keeps the grant\'s order)')
  t.not(sets.of(['1']), first)
  const given = ['4']
  const kept = sets.of(given)
  given.push('5')
  t.same(kept, ['4'], 'a copy: the record\'s array changed later changes nothing')
  const spaced = sets.of(['1 3'])
  t.same(spaced, ['1 3'], 'an id with a space (which joins as two ids do) is its own set, not theirs')
  t.equal(sets.of(['1', '3']), first, 'and the two ids still have theirs')
  const held = sets.of(['a b', 'c'])
  t.same(sets.of(['a', 'b c']), ['a', 'b c'], 'as many ids, joined alike: its own ids')
  t.equal(sets.of(['a b', 'c']), held, 'the set held first still shared')
})

t.test('past the bound: still the scopes, frozen, not held', async (t) => {
  const sets = new ScopeSets()
  for (let i = 0; i < MAX_SCOPE_SETS; i++) sets.of([String(i)])
  const past = sets.of(['past'])
  t.same(past, ['past'])
  t.ok(Object.isFrozen(past))
  t.not(sets.of(['past']), past, 'not held: a copy each time')
  t.equal(sets.of(['0']), sets.of(['0']), 'the sets held before the bound are still shared')
})
