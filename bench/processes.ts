import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFile, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { cpus } from 'node:os'
import type { Counts } from './counters.ts'
import type { Credentials } from './load.ts'
import { isGatewayReady, isTargetMessage, type CacheStats, type GatewayKind, type GatewayReady, type Ready, type RunnerMessage, type ServerKind, type ServerReady, type TargetKind, type TargetMessage } from './messages.ts'
import { childNodeArgs, sibling } from './paths.ts'

// The gateway (or proxy) under test gets core 0; the load generator, the upstream and Redis core 1.
export const pinning = spawnSync('sh', ['-c', 'command -v taskset']).status === 0 && cpus().length >= 2

export function pinned (core: number, command: string, args: string[]): [string, string[]] {
  return pinning ? ['taskset', ['-c', String(core), command, ...args]] : [command, args]
}

/** Pins this process (the load generator) to core 1. */
export function pinSelf (): void {
  if (pinning) spawnSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' })
}

export interface Target<R extends ServerReady = Ready> {
  kind: TargetKind
  child: ChildProcess
  ready: R
  /** The process's CPU time so far, user plus system, in microseconds. */
  cpu (): Promise<number>
  /** Starts a counting pass in the process (bench/counters.ts); `counted` ends it. Not for the workers. */
  count?: (promises: boolean) => Promise<void>
  counted?: (requests: number, label: string) => Promise<Counts>
  stop (signal?: NodeJS.Signals): Promise<void>
}

/** Live tokens made in the gateway's store, and how long making them took. */
export interface Population {
  credentials: Credentials[]
  seconds: number
}

export interface Gateway extends Target<GatewayReady> {
  /** `count` fresh authorization codes of the seeded client, bound to its redirect URI. */
  codes (count: number): Promise<string[]>
  /** The token LRU's lookups so far, answered from it and not. */
  cache (): Promise<CacheStats>
  /** `count` live tokens over many clients and users, passed through `file` (removed once read). */
  population (count: number, file: string): Promise<Population>
}

const TARGET = sibling('target')

/**
 * The target's next message. Rejects on an `error` message, and when the target exits first: a
 * target that dies while loading (say, a broken import) would otherwise leave the runner waiting.
 */
async function nextMessage (child: ChildProcess, kind: TargetKind): Promise<TargetMessage> {
  return await new Promise((resolve, reject) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      reject(new Error(`${kind} has exited`))
      return
    }
    const onMessage = (message: unknown): void => {
      done()
      if (!isTargetMessage(message)) reject(new Error(`${kind} sent ${JSON.stringify(message)}`))
      else if (message.type === 'error') reject(new Error(`${kind}: ${message.message}`))
      else resolve(message)
    }
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      done()
      reject(new Error(`${kind} exited (${signal ?? code ?? 'unknown'}) without answering`))
    }
    const done = (): void => {
      child.off('message', onMessage)
      child.off('exit', onExit)
    }
    child.on('message', onMessage)
    child.on('exit', onExit)
  })
}

/** Sends one message and resolves to the first answer `pick` accepts. */
async function ask<T> (child: ChildProcess, kind: TargetKind, message: RunnerMessage, pick: (answer: TargetMessage) => T | undefined): Promise<T> {
  child.send(message)
  for (;;) {
    const picked = pick(await nextMessage(child, kind))
    if (picked !== undefined) return picked
  }
}

async function launch (kind: TargetKind, core: number, args: string[], nodeArgs: string[]): Promise<Target> {
  const [command, argv] = pinned(core, process.execPath, [...nodeArgs, ...childNodeArgs, TARGET, kind, ...args])
  const child = spawn(command, argv, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const stop = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill(signal)
    await once(child, 'exit')
  }
  const first = await nextMessage(child, kind).catch(async (error: Error) => {
    await stop()
    throw new Error(`${kind} did not start: ${error.message}`)
  })
  if (first.type !== 'ready') {
    await stop()
    throw new Error(`${kind} did not start: it sent ${first.type} first`)
  }
  return {
    kind,
    child,
    ready: first,
    cpu: async () => await ask(child, kind, { type: 'cpu' }, (answer) => answer.type === 'cpu' ? answer.micros : undefined),
    count: async (promises) => { await ask(child, kind, { type: 'count', promises }, (answer) => answer.type === 'counting' ? true : undefined) },
    counted: async (requests, label) => await ask(child, kind, { type: 'counted', requests, label }, (answer) => answer.type === 'counted' ? { bytes: answer.bytes, promises: answer.promises, ticks: answer.ticks, writes: answer.writes } : undefined),
    stop
  }
}

/** The upstream or the plain proxy, in a process of its own pinned to `core`. */
export async function startServer (kind: ServerKind, core: number, args: string[] = [], nodeArgs: string[] = []): Promise<Target> {
  return await launch(kind, core, args, nodeArgs)
}

/** A gateway in a process of its own pinned to `core`, seeded with a client and a token. */
export async function startGateway (kind: GatewayKind, core: number, args: string[] = [], nodeArgs: string[] = []): Promise<Gateway> {
  const target = await launch(kind, core, args, nodeArgs)
  const { ready, child } = target
  if (!isGatewayReady(ready)) {
    await target.stop()
    throw new Error(`${kind} started without its client and token`)
  }
  return {
    ...target,
    ready,
    codes: async (count) => await ask(child, kind, { type: 'codes', count }, (answer) => answer.type === 'codes' ? answer.codes : undefined),
    cache: async () => await ask(child, kind, { type: 'cache' }, (answer) => answer.type === 'cache' ? { hits: answer.hits, misses: answer.misses } : undefined),
    population: async (count, file) => {
      const millis = await ask(child, kind, { type: 'population', count, file }, (answer) => answer.type === 'population' ? answer.millis : undefined)
      return { credentials: await readCredentials(file), seconds: millis / 1000 }
    }
  }
}

/** One `accessToken macKey` line per token, as bench/population.ts writes them. */
async function readCredentials (file: string): Promise<Credentials[]> {
  const text = await readFile(file, 'utf8')
  await rm(file)
  return text.split('\n').filter((line) => line !== '').map((line) => {
    const [accessToken = '', macKey = ''] = line.split(' ')
    return { accessToken, macKey }
  })
}

export async function freePort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  return port
}

/** A Redis of the benchmark's own, on core 1, nothing kept on disk. */
export async function startRedis (): Promise<{ url: string, stop: () => void }> {
  const port = await freePort()
  const [command, args] = pinned(1, 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'])
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  for await (const chunk of child.stdout!) {
    output += String(chunk)
    if (output.includes('Ready to accept connections')) break
  }
  child.stdout!.resume()
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill('SIGKILL') }
}
