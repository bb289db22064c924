// refreshReuseGraceSeconds: within the grace a spent refresh token presented again (a lost answer,
// two refreshes racing) gets the same successor set; past it, reuse revokes the grant as ever.
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { addClient, buildTestApp, callToken, obtainCode } from '../../helpers/app.ts'
import { steppedClock } from '../../helpers/clock.ts'
import { assertTokenSet, codeParams, refreshParams } from '../../helpers/token-checks.ts'

async function setup (t: Test, store: 'memory' | 'redis', refreshReuseGraceSeconds: number, clock?: () => number) {
  const { app, store: records } = await buildTestApp(t, { store, refreshReuseGraceSeconds, ...(clock !== undefined && { clock }) })
  const client = await addClient(records)
  const { code } = await obtainCode(app, client.clientId, { scope: '1 3' })
  const issued = assertTokenSet(t, await callToken(app, codeParams(client, code)))
  return { app, client, issued }
}

for (const store of ['memory', 'redis'] as const) {
  t.test(`${store}: a repeat within the grace gets the same successor; racing refreshes both do`, async (t) => {
    const clock = steppedClock()
    const { app, client, issued } = await setup(t, store, 1, clock.now)
    const first = await callToken(app, refreshParams(client, issued.refresh_token))
    const again = await callToken(app, refreshParams(client, issued.refresh_token))
    t.equal(again.status, 200)
    t.strictSame(again.body, first.body, 'the same successor token set, byte for byte')
    t.equal(again.raw, first.raw)
    const racing = await Promise.all([1, 2, 3].map(async () => await callToken(app, refreshParams(client, (first.body as { refresh_token: string }).refresh_token))))
    t.strictSame(racing.map((answer) => answer.status), [200, 200, 200], 'three parallel refreshes all succeed')
    t.equal(new Set(racing.map((answer) => answer.raw)).size, 1, '...with one successor')
    const successor = racing[0]!.body as { refresh_token: string }

    // The grace is the store's: Redis keeps it as a key's TTL (waited for); the embedded store by
    // its clock, the plugin's, stepped.
    if (store === 'redis') await sleep(1100)
    else clock.step(1100)
    const late = await callToken(app, refreshParams(client, (first.body as { refresh_token: string }).refresh_token))
    t.equal(late.status, 400)
    t.same(late.body, { error: 96009, error_description: 'refresh token already used' }, 'past the grace, reuse is refused...')
    t.equal((await callToken(app, refreshParams(client, successor.refresh_token))).status, 400, '...and the grant revoked')
  })
}

t.test('off by default: the first reuse revokes', async (t) => {
  const { app, client, issued } = await setup(t, 'memory', 0)
  t.equal((await callToken(app, refreshParams(client, issued.refresh_token))).status, 200)
  t.same((await callToken(app, refreshParams(client, issued.refresh_token))).body, { error: 96009, error_description: 'refresh token already used' })
})
