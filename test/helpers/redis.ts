import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { once } from 'node:events'
import type { Test } from 'tap'

export interface TestRedis {
  url: string
  /** A key prefix no other test uses. */
  prefix: string
  /** Stops the server (only for a server this helper started). */
  stop (): Promise<void>
  /** Starts it again on the same port, empty. */
  start (): Promise<void>
}

export async function freePort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

/**
 * A Redis of the test's own: a fresh `redis-server` on a free loopback port, stopped when the
 * test ends; or REDIS_URL when set (then isolation rests on the unique key prefix).
 */
export async function startRedis (t: Test): Promise<TestRedis> {
  const prefix = `test:${randomBytes(6).toString('hex')}:`
  const shared = process.env.REDIS_URL
  if (shared !== undefined && shared !== '') {
    const refuse = async (): Promise<void> => { throw new Error('cannot stop a shared REDIS_URL') }
    return { url: shared, prefix, stop: refuse, start: refuse }
  }
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async (): Promise<void> => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] })
    let output = ''
    for await (const chunk of child.stdout!) {
      output += String(chunk)
      if (output.includes('Ready to accept connections')) break
    }
    child.stdout!.resume()
  }
  const stop = async (): Promise<void> => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    child.kill('SIGKILL')
    await exited
  }
  await start()
  t.teardown(stop)
  return { url: `redis://127.0.0.1:${port}`, prefix, stop, start }
}
