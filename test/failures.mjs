// After `npm test`: every failed test of the run, by file, at the very end of the output, so that a
// failure far up a long log (CI keeps only its end) is still named. Reads the TAP that tap keeps in
// .tap/test-results, only the files written since `since` (ms since the epoch, the first argument),
// as test/slowest.mjs does. In TAP's order: a failed subtest, indented, before the test it is in.
import { readdir, readFile, stat } from 'node:fs/promises'
import { join, relative } from 'node:path'

const RESULTS = '.tap/test-results'
const since = Number(process.argv[2] ?? 0)
/** Enough to name the failures of a bad run without burying the summary above. */
const MOST = 40

async function tapFiles (directory) {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true }).catch(() => [])
  return entries.filter((entry) => entry.isFile() && entry.name.endsWith('.tap')).map((entry) => join(entry.parentPath ?? entry.path, entry.name))
}

// `not ok N - name`, indented by its depth; a TODO or SKIP directive is not a failure.
const FAILED = /^(\s*)not ok \d+ - (.*)$/
const lines = []
for (const file of await tapFiles(RESULTS)) {
  if ((await stat(file)).mtimeMs < since) continue
  const failed = (await readFile(file, 'utf8')).split('\n').map((line) => FAILED.exec(line)).filter((match) => match !== null && !/# (TODO|SKIP)\b/i.test(match[2]))
  if (failed.length === 0) continue
  lines.push(`  ${relative(RESULTS, file).replace(/\.tap$/, '')}`)
  for (const [, indent, name] of failed) lines.push(`    ${indent}${name.replace(/ # time=[\d.]+m?s$/, '')}`)
}
if (lines.length > 0) {
  const shown = lines.slice(0, MOST)
  if (lines.length > MOST) shown.push(`  … and ${lines.length - MOST} lines more: the TAP in ${RESULTS}`)
  process.stdout.write(`\nfailed tests, by file (a subtest, indented, before the test it is in):\n${shown.join('\n')}\n`)
}
