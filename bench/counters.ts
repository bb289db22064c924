// What a target process does per request, counted by Node and V8 themselves rather than timed:
// deterministic, so a shared machine's noise does not move them. Used by the ladder (bench/ladder.ts)
// in counting passes of their own, apart from the timed rounds.
//
// - bytes: V8 heap bytes allocated, GC-aware. Node 20's heap statistics have no allocation total,
//   so it is what the young generation (where V8 allocates every object but the very large ones)
//   filled between collections: its use before each collection less its use after the one before,
//   from v8.GCProfiler's per-collection space statistics, plus its growth since the last. Old-space
//   figures would not do: a full collection frees objects made before the pass. Buffers' backing
//   stores live outside the V8 heap and are not counted.
// - promises and ticks: async_hooks `init` calls of type PROMISE and TickObject (process.nextTick).
//   A promise hook makes every promise dearer, so it is on only in a pass of its own.
// - writes: write system calls (`syscw` of /proc/self/io): socket writes, log writes, IPC.
import { createHook, type AsyncHook } from 'node:async_hooks'
import { readFileSync } from 'node:fs'
import { GCProfiler, getHeapSpaceStatistics } from 'node:v8'

export interface Counts {
  bytes: number
  promises: number
  ticks: number
  writes: number
}

function writeCalls (): number {
  try {
    return Number(/^syscw: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? 0)
  } catch {
    return 0
  }
}

const YOUNG = 'new_space'

/** The young generation's use now. */
function youngNow (): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === YOUNG)?.space_used_size ?? 0
}

type Collection = ReturnType<GCProfiler['stop']>['statistics'][number]

function youngIn (side: Collection['beforeGC']): number {
  return side.heapSpaceStatistics.find((space) => space.spaceName === YOUNG)?.spaceUsedSize ?? 0
}

/** Bytes allocated in the young generation from `start` until `end`, across the collections in between. */
function allocated (start: number, collections: Collection[], end: number): number {
  let total = 0
  let after = start
  for (const collection of collections) {
    total += Math.max(0, youngIn(collection.beforeGC) - after)
    after = youngIn(collection.afterGC)
  }
  return total + Math.max(0, end - after)
}

interface Pass {
  profiler: GCProfiler
  youngAtStart: number
  writesAtStart: number
  hook: AsyncHook | undefined
}

/** One counting pass at a time per process: started, then stopped with what it counted. */
export class RequestCounters {
  #pass: Pass | undefined
  #promises = 0
  #ticks = 0

  /** Starts a pass; with `promises`, the async hook too (which slows every promise down). */
  start (promises: boolean): void {
    this.#pass?.hook?.disable()
    this.#pass?.profiler.stop()
    this.#promises = 0
    this.#ticks = 0
    const hook = promises
      ? createHook({
        init: (_id, type) => {
          if (type === 'PROMISE') this.#promises++
          else if (type === 'TickObject') this.#ticks++
        }
      }).enable()
      : undefined
    const profiler = new GCProfiler()
    profiler.start()
    this.#pass = { profiler, youngAtStart: youngNow(), writesAtStart: writeCalls(), hook }
  }

  stop (): Counts {
    const pass = this.#pass
    if (pass === undefined) throw new Error('no counting pass was started')
    this.#pass = undefined
    pass.hook?.disable()
    const youngAtEnd = youngNow()
    const { statistics } = pass.profiler.stop()
    return { bytes: allocated(pass.youngAtStart, statistics, youngAtEnd), promises: this.#promises, ticks: this.#ticks, writes: writeCalls() - pass.writesAtStart }
  }
}
