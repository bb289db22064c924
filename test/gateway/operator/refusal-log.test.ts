// A flood of forged requests costs the log about 20 lines a second plus one summary, not a line per
// request; verified callers are still logged one by one, whatever the flood.
import { mock } from 'node:test'
import t from 'tap'
import { REFUSAL_LINES_PER_SECOND } from '../../../gateway/operator/access-log.ts'
import { mintToken, newGrantId } from '../../../plugin/access/credentials.ts'
import { awayFromMinuteEdge, liveToken, signedInject } from '../../helpers/gateway.ts'
import { loggedGateway } from '../../helpers/memory-log.ts'

const SUMMARY = 'refused requests not logged one by one'
const UNKNOWN = 'access token invalid or expired'
const MISMATCH = 'mac does not match'

t.test('200 forged requests: at most 20 lines and a summary by reason; verified requests each logged', async (t) => {
  t.equal(REFUSAL_LINES_PER_SECOND, 20)
  const { app, log } = await loggedGateway(t)
  const token = await liveToken(app)
  await awayFromMinuteEdge()
  log.lines.length = 0
  // The log's one-second windows are a setTimeout: stepped by Node's mock timers (tap has no fake
  // timers installed here), so that no window ends in the middle of the flood and none is waited for.
  mock.timers.enable({ apis: ['setTimeout'] })
  t.teardown(() => { mock.timers.reset() })
  const endWindow = async (): Promise<void> => {
    mock.timers.tick(1000)
    await new Promise((resolve) => setImmediate(resolve))
  }

  // 150 never-issued tokens (each its own) and 50 signatures with the wrong key, with 10 verified
  // calls among them; all sent at once.
  const forgedUnknown = Array.from({ length: 150 }, async () =>
    await signedInject(app, { url: '/user/profile', token: mintToken(app.macgate.secret, newGrantId()), macKey: 'forged' }))
  const forgedMac = Array.from({ length: 50 }, async () =>
    await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: 'forged' }))
  const verified = Array.from({ length: 10 }, async () =>
    await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey }))
  const sentAt = Date.now()
  const answers = await Promise.all([...forgedUnknown, ...forgedMac, ...verified])
  const elapsed = Date.now() - sentAt
  t.comment(`210 requests answered in ${elapsed} ms`)
  t.strictSame(answers.map((answer) => answer.statusCode), [...Array(200).fill(401), ...Array(10).fill(200)])

  const refusalLines = (): Array<Record<string, unknown>> => log.lines.filter((line) => line.msg === 'request' && line.status === 401)
  const servedLines = (): Array<Record<string, unknown>> => log.lines.filter((line) => line.msg === 'request' && line.status === 200)
  const windows = Math.ceil(elapsed / 1000) + 1
  t.ok(refusalLines().length <= REFUSAL_LINES_PER_SECOND * windows, `refusal lines bounded: ${refusalLines().length} for ${windows} window(s) at most`)
  if (elapsed < 900) t.equal(refusalLines().length, REFUSAL_LINES_PER_SECOND, 'within one window: exactly 20 refusal lines')
  t.equal(servedLines().length, 10, 'every verified request has its line, even mid-flood')
  for (const line of servedLines()) t.match(line, { method: 'GET', path: '/user/profile', client: token.clientId })

  // After the flood, in the same window: verified requests are still each logged.
  const after = await Promise.all(Array.from({ length: 5 }, async () =>
    await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })))
  t.strictSame(after.map((answer) => answer.statusCode), Array(5).fill(200))
  t.equal(servedLines().length, 15, 'verified requests after the flood are logged too')

  // The window ends: one summary, counted by reason.
  await endWindow()
  const summaries = log.lines.filter((line) => line.msg === SUMMARY)
  t.ok(summaries.length >= 1 && summaries.length <= windows, `${summaries.length} summary line(s)`)
  const suppressed: Record<string, number> = {}
  let total = 0
  for (const summary of summaries) {
    t.match(summary, { level: 30, suppressed: Number, reasons: Object })
    const reasons = summary.reasons as Record<string, number>
    t.equal(summary.suppressed, Object.values(reasons).reduce((sum, n) => sum + n, 0), 'suppressed: the sum of its reasons')
    total += summary.suppressed as number
    for (const [reason, n] of Object.entries(reasons)) suppressed[reason] = (suppressed[reason] ?? 0) + n
  }
  t.same(Object.keys(suppressed).sort(), Object.keys(suppressed).filter((reason) => [UNKNOWN, MISMATCH].includes(reason)).sort(), 'reasons: only the refusals\' own')
  const logged = (reason: string): number => refusalLines().filter((line) => line.reason === reason).length
  t.equal(logged(UNKNOWN) + (suppressed[UNKNOWN] ?? 0), 150, 'every unknown-token refusal: a line, or counted in a summary')
  t.equal(logged(MISMATCH) + (suppressed[MISMATCH] ?? 0), 50, 'every mac mismatch: a line, or counted in a summary')
  t.equal(refusalLines().length + total, 200, 'lines plus suppressed: all 200')
  if (elapsed < 900) t.equal(total, 180, 'within one window: 180 suppressed')
  // Whatever the timing: the flood's first window (from its first refusal to the first summary)
  // wrote exactly 20 refusal lines, and so did every later window that ended in a summary.
  const segments: number[] = [0]
  for (const line of log.lines) {
    if (line.msg === SUMMARY) segments.push(0)
    else if (line.msg === 'request' && line.status === 401) segments[segments.length - 1]!++
  }
  t.strictSame(segments.slice(0, summaries.length), Array(summaries.length).fill(REFUSAL_LINES_PER_SECOND), `refusal lines per window ended by a summary: ${segments.join(', ')}`)

  // A new window: refusals are written again, and a quiet window writes no summary.
  const before = log.lines.length
  t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: 'forged' })).statusCode, 401)
  t.match(log.lines.slice(before), [{ msg: 'request', status: 401, reason: MISMATCH }], 'the next window\'s first refusal has its line')
  await endWindow()
  t.equal(log.lines.filter((line) => line.msg === SUMMARY).length, summaries.length, 'nothing suppressed: no summary')
})
