// The traces tests' gateway: tracing started from the OTEL_* variables the test sets, and a gateway
// on the embedded store with the echo routes, a recording upstream and its log lines kept; all
// closed when the file ends.
import type { Test } from 'tap'
import { buildGateway, startTracing, type GatewayOptions, type GatewayTracing } from '../../gateway/index.ts'
import { MemoryStore } from '../../plugin/index.ts'
import { echoRoutes, liveToken, recordingUpstream } from './gateway.ts'
import { memoryLog } from './memory-log.ts'

/** `env` is set in process.env first: the tracing reads it there, as the CLI's does. */
export async function tracedGateway (t: Test, env: Record<string, string>, { trustedPeer }: Pick<GatewayOptions, 'trustedPeer'> = {}) {
  Object.assign(process.env, env)
  const tracing = (await startTracing(process.env)) as GatewayTracing
  const store = new MemoryStore()
  const upstream = await recordingUpstream(t)
  const log = memoryLog()
  const app = await buildGateway({ store, config: { upstream: upstream.url, routes: echoRoutes }, logger: { level: 'info', stream: log.stream }, tracing, ...(trustedPeer !== undefined && { trustedPeer }) })
  t.teardown(async () => {
    await app.close()
    await store.close()
    await tracing.shutdown()
  })
  const tokens = await liveToken(app)
  return { tracing, store, upstream, log, app, tokens }
}
