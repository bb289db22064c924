import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'

/**
 * Listens on a free loopback port until the test ends (then its connections are closed, kept-alive
 * ones too, so that closing does not wait on them). Resolves to its origin, `http://127.0.0.1:<port>`.
 */
export async function listenOnLoopback (t: Test, server: Server): Promise<string> {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}
