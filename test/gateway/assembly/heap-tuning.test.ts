// The serving process's V8 tuning: the setting exists in this Node (V8 ignores a name it does not
// know, silently), and an operator's own choice on the command line is left alone.
import { execFileSync } from 'node:child_process'
import t from 'tap'
import { PAGE_PROMOTION_FLAG, tuneHeapForServing } from '../../../gateway/assembly/heap-tuning.ts'

t.test('this Node\'s V8 knows the setting', async (t) => {
  const options = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' })
  t.match(options, new RegExp(`^\\s*${PAGE_PROMOTION_FLAG} \\(`, 'm'))
})

t.test('turned off unless the command line chose it', async (t) => {
  t.equal(tuneHeapForServing([]), true, 'nothing chosen: turned off')
  t.equal(tuneHeapForServing(['--max-old-space-size=512', '--enable-source-maps']), true, 'other options: turned off')
  for (const chosen of ['--page-promotion', '--no-page-promotion', '--page_promotion', '--no-page_promotion']) {
    t.equal(tuneHeapForServing(['--enable-source-maps', chosen]), false, `${chosen}: left as chosen`)
  }
})
