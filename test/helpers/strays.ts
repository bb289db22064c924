import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'

export interface Strays {
  /** Asserts there were none so far. */
  check: (t: Test) => void
  /** The file's last test: none once the gateways have closed, `comment` said after it. */
  checkLast: (t: Test, comment?: () => string) => void
}

/**
 * Collects unhandled rejections and exceptions for the rest of the file: the gateway must turn
 * every failure into an answer. `check(t)` asserts there were none.
 */
export function collectStrays (t: Test): Strays {
  const strays: unknown[] = []
  const onStray = (reason: unknown): void => { strays.push(reason) }
  process.on('unhandledRejection', onStray)
  process.on('uncaughtException', onStray)
  t.teardown(() => {
    process.off('unhandledRejection', onStray)
    process.off('uncaughtException', onStray)
  })
  const check = (t: Test): void => { t.same(strays.map(String), [], 'no unhandled rejection or exception') }
  const checkLast = (t: Test, comment?: () => string): void => {
    t.test('nothing was left to reject after the gateways closed', async (t) => {
      // Real time only: a late rejection from a closed socket has no event to wait for.
      await sleep(300)
      check(t)
      if (comment !== undefined) t.comment(comment())
    })
  }
  return { check, checkLast }
}
