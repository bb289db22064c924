import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { buildGateway } from '../../gateway/index.ts'
import { MemoryStore } from '../../plugin/index.ts'

/** A pino destination that keeps every line, parsed, for a test to read. */
export function memoryLog (): { lines: Array<Record<string, unknown>>, stream: Writable } {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  })
  return { lines, stream }
}

/** A gateway on the embedded store logging at `level` into a memory log; closed when the test ends. */
export async function loggedGateway (t: Test, level = 'info'): Promise<{ app: FastifyInstance, log: ReturnType<typeof memoryLog> }> {
  const log = memoryLog()
  const store = new MemoryStore()
  const app = await buildGateway({ store, logger: { level, stream: log.stream } })
  t.teardown(async () => {
    await app.close()
    await store.close()
  })
  return { app, log }
}
