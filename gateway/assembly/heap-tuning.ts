import { setFlagsFromString } from 'node:v8'

/** The V8 setting this changes, as `node --v8-options` lists it. */
export const PAGE_PROMOTION_FLAG = '--page-promotion'

/**
 * Turns V8's page promotion off in a process that serves requests (`macgate start`, each worker),
 * unless the operator chose it on the command line (`node --page-promotion` or `--no-page-promotion`);
 * says whether it did. Called as the process starts, before any request: V8 reads the setting at
 * each young collection.
 *
 * At a young collection, V8 moves a page whose objects are mostly still live to the old generation
 * whole, instead of copying them. Under load the pages allocated last hold the requests in flight,
 * and a request on Redis nonces is live until its turn's batch is answered: moved whole, its objects
 * die in the old generation a moment later, and until the next full collection they hold every
 * young object they point to, which the next young collection copies and moves up in turn. With it
 * off, the bench's gateway on Redis nonces spent about 5 µs a request in young collections instead of
 * 40-48, and its CPU a request fell by about 15% (bench/HISTORY.md); the plain proxy's did not move.
 */
export function tuneHeapForServing (execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((arg) => arg.replaceAll('_', '-').replace('--no-', '--') === PAGE_PROMOTION_FLAG)) return false
  setFlagsFromString(`--no-${PAGE_PROMOTION_FLAG.slice(2)}`)
  return true
}
