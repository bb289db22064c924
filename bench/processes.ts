import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { cpus } from 'node:os'
import { childNodeArgs, sibling } from './paths.js'

// The gateway (or proxy) under test gets core 0; the load generator, the upstream and Redis core 1.
export const pinning = spawnSync('sh', ['-c', 'command -v taskset']).status === 0 && cpus().length >= 2

function pinned (core: number, command: string, args: string[]): [string, string[]] {
  return pinning ? ['taskset', ['-c', String(core), command, ...args]] : [command, args]
}

/** Pins this process (the load generator) to core 1. */
export function pinSelf (): void {
  if (pinning) spawnSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' })
}

export interface Target {
  child: ChildProcess
  ready: Record<string, unknown> & { port: number }
  /** The process's CPU time so far, user plus system, in microseconds. */
  cpu (): Promise<number>
  request<T> (message: object, answer: string): Promise<T>
  stop (signal?: NodeJS.Signals): Promise<void>
}

const TARGET = sibling('target')

export async function startTarget (kind: string, core: number, args: string[] = [], nodeArgs: string[] = []): Promise<Target> {
  const [command, argv] = pinned(core, process.execPath, [...nodeArgs, ...childNodeArgs, TARGET, kind, ...args])
  const child = spawn(command, argv, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const request = async <T>(message: object, answer: string): Promise<T> => {
    child.send(message)
    for (;;) {
      const [reply] = await once(child, 'message') as [{ type: string, message?: string }]
      if (reply.type === 'error') throw new Error(`${kind}: ${reply.message ?? 'failed'}`)
      if (reply.type === answer) return reply as T
    }
  }
  const [ready] = await once(child, 'message') as [Target['ready'] & { type?: string, message?: string }]
  if (ready.type === 'error') throw new Error(`${kind} did not start: ${ready.message ?? ''}`)
  return {
    child,
    ready,
    cpu: async () => (await request<{ micros: number }>({ type: 'cpu' }, 'cpu')).micros,
    request,
    stop: async (signal: NodeJS.Signals = 'SIGKILL') => {
      if (child.exitCode !== null) return
      child.kill(signal)
      await once(child, 'exit')
    }
  }
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
