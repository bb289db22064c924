import type { Test } from 'tap'

/**
 * Collects unhandled rejections and exceptions for the rest of the file: the gateway must turn
 * every failure into an answer. `check(t)` asserts there were none.
 */
export function collectStrays (t: Test): { check: (t: Test) => void } {
  const strays: unknown[] = []
  const onStray = (reason: unknown): void => { strays.push(reason) }
  process.on('unhandledRejection', onStray)
  process.on('uncaughtException', onStray)
  t.teardown(() => {
    process.off('unhandledRejection', onStray)
    process.off('uncaughtException', onStray)
  })
  return { check: (t) => { t.same(strays.map(String), [], 'no unhandled rejection or exception') } }
}
