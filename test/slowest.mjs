// After `npm test`: the ten slowest test files of the run, so that the next slow one is seen.
// Reads each file's own time from the TAP that tap keeps in .tap/test-results (its closing
// `# time=...ms` line); only the files written since `since` (ms since the epoch, the first
// argument), so that results left from earlier runs of other files are not listed.
import { readdir, readFile, stat } from 'node:fs/promises'
import { join, relative } from 'node:path'

const RESULTS = '.tap/test-results'
const since = Number(process.argv[2] ?? 0)

/** Every .tap file under `directory`. */
async function tapFiles (directory) {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true }).catch(() => [])
  return entries.filter((entry) => entry.isFile() && entry.name.endsWith('.tap')).map((entry) => join(entry.parentPath ?? entry.path, entry.name))
}

const timed = []
for (const file of await tapFiles(RESULTS)) {
  if ((await stat(file)).mtimeMs < since) continue
  const time = /^# time=([\d.]+)ms$/m.exec(await readFile(file, 'utf8'))
  timed.push({ name: relative(RESULTS, file).replace(/\.tap$/, ''), ms: time === null ? Number.NaN : Number(time[1]) })
}
timed.sort((a, b) => (Number.isNaN(b.ms) ? Infinity : b.ms) - (Number.isNaN(a.ms) ? Infinity : a.ms))
if (timed.length > 0) {
  const lines = timed.slice(0, 10).map(({ name, ms }) => `${Number.isNaN(ms) ? '   no time' : `${(ms / 1000).toFixed(1).padStart(8)} s`}  ${name}`)
  process.stdout.write(`\nslowest test files (of ${timed.length}; no time: did not finish):\n${lines.join('\n')}\n`)
}
