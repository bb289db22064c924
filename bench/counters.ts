// What a target process does per request, counted by Node and V8 themselves rather than timed:
// deterministic, so a shared machine's noise does not move them. Used by the ladder (bench/ladder.ts)
// in counting passes of their own, apart from the timed rounds.
//
// - bytes: V8 heap bytes allocated, GC-aware. Node 20's heap statistics have no allocation total,
//   so it is the heap's growth over the pass plus what every collection in it freed, each from
//   v8.GCProfiler's before/after heap statistics. Buffers' backing stores live outside the V8 heap
//   and are not in it.
// - promises and ticks: async_hooks `init` calls of type PROMISE and TickObject (process.nextTick).
//   A promise hook makes every promise dearer, so it is on only in a pass of its own.
// - writes: write system calls (`syscw` of /proc/self/io): socket writes, log writes, IPC.
import { createHook, type AsyncHook } from 'node:async_hooks'
import { readFileSync } from 'node:fs'
import { GCProfiler, getHeapStatistics } from 'node:v8'

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

interface Pass {
  profiler: GCProfiler
  usedAtStart: number
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
    this.#pass = { profiler, usedAtStart: getHeapStatistics().used_heap_size, writesAtStart: writeCalls(), hook }
  }

  stop (): Counts {
    const pass = this.#pass
    if (pass === undefined) throw new Error('no counting pass was started')
    this.#pass = undefined
    pass.hook?.disable()
    const usedAtEnd = getHeapStatistics().used_heap_size
    const { statistics } = pass.profiler.stop()
    const freed = statistics.reduce((total, gc) => total + gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize, 0)
    return { bytes: usedAtEnd - pass.usedAtStart + freed, promises: this.#promises, ticks: this.#ticks, writes: writeCalls() - pass.writesAtStart }
  }
}
