// One sizing for the seeded fuzzers (test/fuzz.test.ts, test/gateway/open-api/flood.test.ts): a fifth of the full
// count by default, so that `npm test` stays short; `FUZZ_FULL=1` sends the full count (the
// nightly-sized run, 20,000 and more inject requests in fuzz.test.ts).

export const FUZZ_FULL = process.env.FUZZ_FULL === '1'

/** How many of a fuzzer's `full` requests this run sends. */
export function fuzzCount (full: number): number {
  return FUZZ_FULL ? full : Math.ceil(full / 5)
}
