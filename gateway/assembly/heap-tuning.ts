import { setFlagsFromString } from 'node:v8'

/**
 * The V8 settings a serving process turns off, as `node --v8-options` lists them, each by the name
 * the start log gives it. Both decide where V8 puts objects that have lived a little; under load
 * those are the requests in flight, which die a moment later, and the old generation is the dear
 * place for them to die (its objects hold every young object they point to until the next full
 * collection, and that collection is what clears them).
 *
 * - Page promotion: at a young collection V8 moves a page whose objects are mostly still live to
 *   the old generation whole. On Redis nonces a request is live until its turn's batch is
 *   answered, so the newest pages are mostly live: with it off, the bench's gateway on Redis nonces
 *   spent about 5 µs a request in young collections instead of 40-48, and its CPU a request fell by
 *   about 15% (bench/HISTORY.md); the plain proxy's did not move.
 * - Allocation-site pretenuring: V8 allocates straight into the old generation what comes from a
 *   site whose first objects mostly survived young collections. Which sites it picks depends on
 *   the process's first seconds of load. In 16 of 75 gateway processes the bench started it picked
 *   sites of the request path (stream listeners, Fastify's reply, undici's request), for the
 *   process's whole life: young collections 3.5 times dearer, a full collection a second, 20-40
 *   µs more CPU a request. With it off, none of 26, the rest within the rounds' noise
 *   (bench/HISTORY.md).
 */
export const SERVING_FLAGS = { pagePromotion: '--page-promotion', allocationSitePretenuring: '--allocation-site-pretenuring' } as const

export type ServingFlag = keyof typeof SERVING_FLAGS

/** What became of each setting: turned off, or left as the `node` command line chose it. */
export type HeapTuning = Record<ServingFlag, 'off' | 'as node was started'>

/**
 * Turns each of `SERVING_FLAGS` off in a process that serves requests (`macgate start`, each
 * worker), unless the operator chose it on the command line (`node --page-promotion` or
 * `--no-page-promotion`, either spelling); says what it did. Called as the process starts, before
 * any request: V8 reads both at each young collection.
 */
export function tuneHeapForServing (execArgv: readonly string[] = process.execArgv): HeapTuning {
  const chosen = new Set(execArgv.map((arg) => arg.replaceAll('_', '-').replace('--no-', '--')))
  const tuning = {} as HeapTuning
  for (const [name, flag] of Object.entries(SERVING_FLAGS) as Array<[ServingFlag, string]>) {
    if (chosen.has(flag)) {
      tuning[name] = 'as node was started'
      continue
    }
    setFlagsFromString(`--no-${flag.slice(2)}`)
    tuning[name] = 'off'
  }
  return tuning
}
