// After `npm test`: every failed test of the run, by file, at the very end of the output, so that a
// failure far up a long log (CI keeps only its end) is still named. Reads the TAP that tap keeps
// (test/tap-results.mjs) of the files written since the first argument (ms since the epoch). In
// TAP's order: a failed subtest, indented, before the test it is in.
import { RESULTS, tapResultsSince } from './tap-results.mjs'

/** Enough to name the failures of a bad run without burying the summary above. */
const MOST = 40

// `not ok N - name`, indented by its depth; a TODO or SKIP directive is not a failure.
const FAILED = /^(\s*)not ok \d+ - (.*)$/
const lines = []
for (const { name: file, text } of await tapResultsSince(Number(process.argv[2] ?? 0))) {
  const failed = text.split('\n').map((line) => FAILED.exec(line)).filter((match) => match !== null && !/# (TODO|SKIP)\b/i.test(match[2]))
  if (failed.length === 0) continue
  lines.push(`  ${file}`)
  for (const [, indent, name] of failed) lines.push(`    ${indent}${name.replace(/ # time=[\d.]+m?s$/, '')}`)
}
if (lines.length > 0) {
  const shown = lines.slice(0, MOST)
  if (lines.length > MOST) shown.push(`  … and ${lines.length - MOST} lines more: the TAP in ${RESULTS}`)
  process.stdout.write(`\nfailed tests, by file (a subtest, indented, before the test it is in):\n${shown.join('\n')}\n`)
}
