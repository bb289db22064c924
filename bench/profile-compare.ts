// Two targets' CPU profiles side by side, by function: each function's self time per request,
// averaged over the rounds, and what the second adds over the first. For a rung that costs more
// than its parts (the ladder): which functions the difference is in, under load, in the server.
import { functionLabel, sumOf, timeBy, type Profile } from './profile-steps.ts'

/** Microseconds of the main thread's time per request in each function (its own time, not its callees'); idle left out. */
export function selfPerRequest (profile: Profile, requests: number): Map<string, number> {
  const micros = timeBy(profile, (frame) => frame.functionName === '(idle)' ? undefined : functionLabel(frame))
  for (const [name, total] of micros) micros.set(name, total / Math.max(1, requests))
  return micros
}

function mean (rounds: Array<Map<string, number>>): Map<string, number> {
  const sums = new Map<string, number>()
  for (const round of rounds) for (const [name, micros] of round) sums.set(name, (sums.get(name) ?? 0) + micros / rounds.length)
  return sums
}

/** The busy time per request of each, and the `count` functions whose time moved most, second less first. */
export function comparisonTable (names: [string, string], first: Array<Map<string, number>>, second: Array<Map<string, number>>, count = 30): string {
  const [a, b] = [mean(first), mean(second)]
  const moved = [...new Set([...a.keys(), ...b.keys()])]
    .map((name): [string, number] => [name, (b.get(name) ?? 0) - (a.get(name) ?? 0)])
    .sort((x, y) => Math.abs(y[1]) - Math.abs(x[1]))
    .slice(0, count)
  return [
    `main thread busy per request: ${names[0]} ${sumOf(a).toFixed(1)} µs, ${names[1]} ${sumOf(b).toFixed(1)} µs (${(sumOf(b) - sumOf(a)).toFixed(1)}; under the profiler, which adds its own cost)`,
    '',
    `${'µs/req'.padStart(7)}  function (${names[1]} less ${names[0]})`,
    ...moved.map(([name, micros]) => `${(micros >= 0 ? '+' : '') + micros.toFixed(2)}`.padStart(7) + `  ${name}`)
  ].join('\n')
}
