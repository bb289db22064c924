// After `npm test`: the ten slowest test files of the run, so that the next slow one is seen.
// Reads each file's own time from the TAP that tap keeps (test/tap-results.mjs: its closing
// `# time=...ms` line), of the files written since the first argument (ms since the epoch).
import { tapResultsSince } from './tap-results.mjs'

const timed = (await tapResultsSince(Number(process.argv[2] ?? 0))).map(({ name, text }) => {
  const time = /^# time=([\d.]+)ms$/m.exec(text)
  return { name, ms: time === null ? Number.NaN : Number(time[1]) }
})
timed.sort((a, b) => (Number.isNaN(b.ms) ? Infinity : b.ms) - (Number.isNaN(a.ms) ? Infinity : a.ms))
if (timed.length > 0) {
  const lines = timed.slice(0, 10).map(({ name, ms }) => `${Number.isNaN(ms) ? '   no time' : `${(ms / 1000).toFixed(1).padStart(8)} s`}  ${name}`)
  process.stdout.write(`\nslowest test files (of ${timed.length}; no time: did not finish):\n${lines.join('\n')}\n`)
}
