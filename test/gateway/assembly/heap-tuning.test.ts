// The serving process's V8 tuning: each setting exists in this Node (V8 ignores a name it does not
// know, silently), and an operator's own choice on the command line is left alone, setting by setting.
import { execFileSync } from 'node:child_process'
import t from 'tap'
import { SERVING_FLAGS, tuneHeapForServing } from '../../../gateway/assembly/heap-tuning.ts'

t.test('this Node\'s V8 knows each setting', async (t) => {
  const options = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' })
  for (const flag of Object.values(SERVING_FLAGS)) t.match(options, new RegExp(`^\\s*${flag} \\(`, 'm'), flag)
})

t.test('each turned off unless the command line chose it', async (t) => {
  const allOff = { pagePromotion: 'off', allocationSitePretenuring: 'off' }
  t.same(tuneHeapForServing([]), allOff, 'nothing chosen: both off')
  t.same(tuneHeapForServing(['--max-old-space-size=512', '--enable-source-maps']), allOff, 'other options: both off')
  for (const chosen of ['--page-promotion', '--no-page-promotion', '--page_promotion', '--no-page_promotion']) {
    t.same(tuneHeapForServing(['--enable-source-maps', chosen]), { pagePromotion: 'as node was started', allocationSitePretenuring: 'off' }, `${chosen}: page promotion left as chosen`)
  }
  for (const chosen of ['--allocation-site-pretenuring', '--no-allocation-site-pretenuring', '--allocation_site_pretenuring']) {
    t.same(tuneHeapForServing([chosen]), { pagePromotion: 'off', allocationSitePretenuring: 'as node was started' }, `${chosen}: pretenuring left as chosen`)
  }
  t.same(tuneHeapForServing(['--page-promotion', '--no-allocation-site-pretenuring']), { pagePromotion: 'as node was started', allocationSitePretenuring: 'as node was started' }, 'both chosen: both left')
})
