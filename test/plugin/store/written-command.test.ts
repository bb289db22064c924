// A command macgate writes itself (written-command.ts), sent through ioredis to a real Redis: its
// answer or its failure goes to its receiver, once, with no promise; ioredis's argument
// transformers still apply; a receiver that throws does not stop ioredis's reply handler.
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { WrittenCommand, type CommandReceiver } from '../../../plugin/store/redis/written-command.ts'
import { startRedis } from '../../helpers/redis.ts'

/** A receiver that keeps what it is told, in order, and can be waited on for its next message. */
class Told implements CommandReceiver {
  readonly messages: Array<['answered', unknown] | ['failed', unknown, WrittenCommand]> = []
  #next: (() => void) | undefined

  answered (value: unknown): void {
    this.messages.push(['answered', value])
    this.#next?.()
  }

  failed (error: unknown, command: WrittenCommand): void {
    this.messages.push(['failed', error, command])
    this.#next?.()
  }

  async next (): Promise<void> {
    await new Promise<void>((resolve) => { this.#next = resolve })
  }
}

async function sent (t: Test, redis: Redis, name: string, args: Array<string | number | string[]>, replyEncoding?: BufferEncoding): Promise<Told> {
  const told = new Told()
  const answered = told.next()
  const command = new WrittenCommand(name, args, told, replyEncoding)
  t.equal(redis.sendCommand(command), undefined, 'no promise of its own')
  await answered
  return told
}

t.test('answers and failures go to the receiver, once', async (t) => {
  const own = await startRedis(t)
  const redis = new Redis(own.url)
  t.teardown(() => { redis.disconnect() })
  const key = `${own.prefix}written`

  // MSET has an argument transformer in ioredis (a Map or object to pairs): run as ioredis runs it.
  t.same((await sent(t, redis, 'mset', [key, 'é', `${key}:n`, 7], 'utf8')).messages, [['answered', 'OK']], 'a status reply')
  t.same((await sent(t, redis, 'get', [key], 'utf8')).messages, [['answered', 'é']], 'a bulk reply as text of the reply encoding')
  t.same((await sent(t, redis, 'get', [key])).messages, [['answered', Buffer.from('é')]], 'else as a Buffer, as ioredis gives it')
  t.same((await sent(t, redis, 'mget', [[key, `${key}:n`, `${key}:none`]], 'utf8')).messages, [['answered', ['é', '7', null]]], 'an array of keys flattened, as ioredis flattens it')

  const failed = await sent(t, redis, 'incr', [key])
  t.equal(failed.messages.length, 1)
  const [kind, error, command] = failed.messages[0] as ['failed', Error, WrittenCommand]
  t.equal(kind, 'failed')
  t.match(error.message, /not an integer/, 'Redis\'s error reply')
  t.same(command.args, [key], 'the command that failed, with its arguments')
  t.ok(command.isSettled)
})

t.test('a receiver that throws: thrown in a microtask of its own, and ioredis answers the next commands', async (t) => {
  const own = await startRedis(t)
  const redis = new Redis(own.url)
  t.teardown(() => { redis.disconnect() })
  const thrown = new Promise<unknown>((resolve) => {
    const listeners = process.rawListeners('uncaughtException')
    process.removeAllListeners('uncaughtException')
    process.once('uncaughtException', (error) => {
      for (const listener of listeners) process.on('uncaughtException', listener as NodeJS.UncaughtExceptionListener)
      resolve(error)
    })
  })
  const throwing: CommandReceiver = { answered: () => { throw new Error('the receiver broke') }, failed: () => {} }
  const after = new Told()
  const answered = after.next()
  // Both in one write, so that Redis's two replies come in one read: the second is handled after the first's receiver threw.
  redis.sendCommand(new WrittenCommand('ping', [], throwing))
  redis.sendCommand(new WrittenCommand('echo', ['still here'], after, 'utf8'))
  t.match(await thrown, { message: 'the receiver broke' })
  await answered
  t.same(after.messages, [['answered', 'still here']], 'the next reply still handled')
})
