// A turn's Redis commands in one write: the nonce batch and the token reads of one event-loop turn
// go to a single Redis in one system call (its socket corked while they are written), counted as
// the calls into the socket's handle (each one write or writev system call: libuv's), and each
// still gets its own answer. Not /proc/self/io: it counts every file's writes, the test
// runner's output and libuv's own wake-ups among them.
import type { Socket } from 'node:net'
import type { Redis } from 'ioredis'
import t from 'tap'
import { RedisStore } from '../../../plugin/index.ts'
import { hashSecret, mintToken, newGrantId } from '../../../plugin/access/credentials.ts'
import { startRedis } from '../../helpers/redis.ts'
import { issue, nonceUse, SECRET } from '../../helpers/store-suite.ts'

const HANDLE_WRITES = ['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString', 'writeUcs2String']

/** Counts the writes the socket hands to libuv from now on. */
function writeCounter (socket: Socket): () => number {
  const handle = (socket as unknown as { _handle: Record<string, (...args: unknown[]) => unknown> })._handle
  let calls = 0
  for (const name of HANDLE_WRITES) {
    const write = handle[name]!
    handle[name] = function (this: unknown, ...args: unknown[]) {
      calls++
      return write.apply(this, args)
    }
  }
  return () => calls
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
  const writeCalls = writeCounter((store.redis as Redis).stream)
  const [read, fresh, replayed] = await Promise.all([
    store.getAccessToken(accessHash, grantId),
    store.useNonce(nonceUse(accessHash, `1:${minute}`, { minute })),
    store.useNonce(nonceUse(accessHash, `0:${minute}`, { minute }))
  ])
  const writes = writeCalls()
  t.same(read, set.access.record, 'the token read answered')
  t.equal(fresh, true, 'the new nonce first seen')
  t.equal(replayed, false, 'the replay found')
  t.equal(writes, 1, 'the MGET and the script call in one write')
  const unknown = hashSecret(mintToken(SECRET, newGrantId()))
  const [missing] = await Promise.all([store.getAccessToken(unknown, newGrantId()), store.useNonce(nonceUse(accessHash, `2:${minute}`, { minute }))])
  t.equal(missing, undefined, 'and the next turn as well')
})
