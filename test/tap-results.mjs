// The TAP that tap keeps of each test file in .tap/test-results, for the scripts `npm test` runs
// after tap (test/slowest.mjs, test/failures.mjs): only the files written since `since` (ms since
// the epoch), so that results left from earlier runs of other files are not read.
import { readdir, readFile, stat } from 'node:fs/promises'
import { join, relative } from 'node:path'

export const RESULTS = '.tap/test-results'

/** Each test file's name (its path, as tap runs it) and its TAP text. */
export async function tapResultsSince (since) {
  const entries = await readdir(RESULTS, { withFileTypes: true, recursive: true }).catch(() => [])
  const results = []
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith('.tap')) continue
    const file = join(entry.parentPath ?? entry.path, entry.name)
    if ((await stat(file)).mtimeMs < since) continue
    results.push({ name: relative(RESULTS, file).replace(/\.tap$/, ''), text: await readFile(file, 'utf8') })
  }
  return results
}
