// A turn's Redis commands in one write: the nonce batch and the token reads of one event-loop turn
// go to a single Redis in one system call (its socket corked while they are written), counted as
// this process's write calls (/proc/self/io), and each still gets its own answer.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { RedisStore } from '../../../plugin/index.ts'
import { hashSecret, mintToken, newGrantId } from '../../../plugin/access/credentials.ts'
import { startRedis } from '../../helpers/redis.ts'
import { issue, nonceUse, SECRET } from '../../helpers/store-suite.ts'

function writeCalls (): number {
  return Number(/^syscw: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1])
}

t.test('a token read and a nonce batch of one turn: one write, each answered', async (t) => {
  const redis = await startRedis(t)
  const store = await new RedisStore(redis.url, { prefix: redis.prefix }).connect()
  t.teardown(async () => { await store.close() })
  const { grantId, accessHash, set } = issue(newGrantId(), { refresh: false })
  await store.saveTokens(set)
  const minute = Math.floor(Date.now() / 60_000)
  // A first turn loads the script (EVALSHA's NOSCRIPT, then the script itself): not counted.
  await Promise.all([store.getAccessToken(accessHash, grantId), store.useNonce(nonceUse(accessHash, `0:${minute}`, { minute }))])
  const before = writeCalls()
  const [read, fresh, replayed] = await Promise.all([
    store.getAccessToken(accessHash, grantId),
    store.useNonce(nonceUse(accessHash, `1:${minute}`, { minute })),
    store.useNonce(nonceUse(accessHash, `0:${minute}`, { minute }))
  ])
  const writes = writeCalls() - before
  t.same(read, set.access.record, 'the token read answered')
  t.equal(fresh, true, 'the new nonce first seen')
  t.equal(replayed, false, 'the replay found')
  t.equal(writes, 1, 'the MGET and the script call in one write')
  const unknown = hashSecret(mintToken(SECRET, newGrantId()))
  const [missing] = await Promise.all([store.getAccessToken(unknown, newGrantId()), store.useNonce(nonceUse(accessHash, `2:${minute}`, { minute }))])
  t.equal(missing, undefined, 'and the next turn as well')
})
