// ioredis's command timeout for many commands under one timer: each command fails at its own
// deadline unless settled, a settled command is let go at once when answers come in order, and
// one answered out of order is held only until those before it go. Timers and clock are stepped.
import { mock } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t, { type Test } from 'tap'
import { CommandDeadlines, type Deadlined } from '../../../plugin/store/redis/command-deadlines.ts'

/** A command as ioredis settles it: the watch is told first, then `isSettled` turns true. */
class FakeCommand implements Deadlined {
  isSettled = false
  timedOutAt: number | undefined
  readonly watch: CommandDeadlines

  constructor (watch: CommandDeadlines) {
    this.watch = watch
  }

  timedOut (): void {
    this.timedOutAt = Date.now()
    this.settle()
  }

  settle (): void {
    this.watch.settled(this)
    this.isSettled = true
  }
}

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

function stepped (t: Test): void {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 })
  t.teardown(() => { mock.timers.reset() })
}

t.test('answered in order: each let go as it settles; none times out', async (t) => {
  stepped(t)
  const watch = new CommandDeadlines(2000, Date.now)
  const commands = [1, 2, 3].map(() => new FakeCommand(watch))
  for (const command of commands) watch.watch(command)
  t.equal(watch.watching, 3)
  commands[0]!.settle()
  t.equal(watch.watching, 2, 'the first let go at once')
  commands[1]!.settle()
  commands[2]!.settle()
  t.equal(watch.watching, 0, 'all let go')
  mock.timers.tick(5000)
  t.same(commands.map((command) => command.timedOutAt), [undefined, undefined, undefined])
})

t.test('an unanswered command fails at its own deadline, not before; later ones at theirs', async (t) => {
  stepped(t)
  const watch = new CommandDeadlines(2000, Date.now)
  const first = new FakeCommand(watch)
  watch.watch(first)
  mock.timers.tick(500)
  const second = new FakeCommand(watch)
  watch.watch(second)
  mock.timers.tick(1499)
  t.equal(first.timedOutAt, undefined, '1 ms before its deadline: still waiting')
  mock.timers.tick(1)
  t.equal(first.timedOutAt, 2000, 'failed at 2000 ms')
  t.equal(second.timedOutAt, undefined, 'the next, sent 500 ms later, still waiting')
  mock.timers.tick(499)
  t.equal(second.timedOutAt, undefined)
  mock.timers.tick(1)
  t.equal(second.timedOutAt, 2500, 'failed at its own deadline: the timer armed again for it')
  t.equal(watch.watching, 0)
})

t.test('answered out of order: held until the first goes, then let go with it; never failed', async (t) => {
  stepped(t)
  const watch = new CommandDeadlines(1000, Date.now)
  const [hung, answered, last] = [new FakeCommand(watch), new FakeCommand(watch), new FakeCommand(watch)]
  for (const command of [hung, answered, last]) watch.watch(command)
  answered.settle()
  t.equal(watch.watching, 3, 'the settled second waits behind the first')
  mock.timers.tick(1000)
  t.equal(hung.timedOutAt, 1000, 'the first failed at its deadline')
  t.equal(answered.timedOutAt, undefined, 'the answered one is not failed')
  t.equal(last.timedOutAt, 1000, 'the last, sent at the same time and unanswered, failed with it')
  t.equal(watch.watching, 0)
  const again = new FakeCommand(watch)
  watch.watch(again)
  again.settle()
  t.equal(watch.watching, 0, 'after an expiry, the next command is watched and let go as before')
})

t.test('a long run answered in order behind the ones still waiting: let go, and the rest still fail on time', async (t) => {
  stepped(t)
  const watch = new CommandDeadlines(1000, Date.now)
  const commands = Array.from({ length: 3000 }, () => new FakeCommand(watch))
  for (const command of commands) watch.watch(command)
  for (const command of commands.slice(0, 2500)) command.settle()
  t.equal(watch.watching, 500, 'the 2,500 answered let go')
  mock.timers.tick(1000)
  t.equal(commands.filter((command) => command.timedOutAt === 1000).length, 500, 'the 500 unanswered failed at their deadline')
  t.equal(watch.watching, 0)
})

t.test('under steady load (never a moment with none in flight), a command is let go once passed', async (t) => {
  stepped(t)
  const watch = new CommandDeadlines(2000, Date.now)
  // Each made in a function of its own, so that only the watch could still hold it.
  const settledFirst = (): WeakRef<FakeCommand> => {
    const first = new FakeCommand(watch)
    watch.watch(first)
    return new WeakRef(first)
  }
  const answered = settledFirst()
  const late = new FakeCommand(watch)
  watch.watch(late)
  answered.deref()!.settle()
  const behindLate = settledFirst()
  behindLate.deref()!.settle()
  mock.timers.tick(1000)
  const newest = new FakeCommand(watch)
  watch.watch(newest)
  mock.timers.tick(1000)
  t.ok(late.timedOutAt !== undefined, 'the unanswered one timed out at its deadline')
  t.equal(watch.watching, 1, 'the newest still in flight: the list has not emptied')
  // A WeakRef holds its target to the end of the job that made it: collected only after.
  await new Promise((resolve) => setImmediate(resolve))
  gc()
  t.equal(answered.deref(), undefined, 'answered first: collected while others are in flight')
  t.equal(behindLate.deref(), undefined, 'answered behind one that timed out: collected once passed')
  newest.settle()
  t.equal(watch.watching, 0)
})
