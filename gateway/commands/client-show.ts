import { clientWithoutSecrets, quotaCounterName, quotaWindow, type ClientRecord, type NonceReports } from '../../plugin/index.ts'
import { loadConfig, type RouteRule } from '../config/gateway-config.ts'
import { withAdminStore } from './command-store.ts'
import type { CommandIO } from './io.ts'
import { OperatorError, parseCommand, UsageError } from './usage.ts'

/** One limited route as `clients show` prints it: the limit that applies and the window's use. */
export interface RouteQuotaUse {
  route: string
  perMinute: number
  /** Where the limit comes from: the client's own, or the route's default. */
  from: 'client' | 'route'
  used: number
}

/** The client's limit and this minute's use on each route of `routes` with a quota (a route's counters are named by its path, as the proxy's routeQuota names them: open-api/proxy.ts). */
export async function quotaUses (store: NonceReports, client: ClientRecord, routes: RouteRule[], now = Date.now()): Promise<RouteQuotaUse[]> {
  const limited = routes.filter((route) => route.quota !== undefined)
  const used = await store.quotaUsed(limited.map((route) => quotaCounterName(client.id, route.path)), quotaWindow(now))
  return limited.map((route, index) => ({
    route: route.path,
    perMinute: client.quotaPerMinute ?? route.quota!.perMinute,
    from: client.quotaPerMinute === undefined ? 'route' : 'client',
    used: used[index]!
  }))
}

/**
 * `clients show ID [--config FILE]`: the client's record (no secret) and, for each route of the
 * gateway config with a quota, the limit that applies and the current minute's use over every
 * instance (on the shared store).
 */
export async function show (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { values, positionals } = parseCommand('clients show', { args, allowPositionals: true, options: { config: { type: 'string' }, json: { type: 'boolean' } } })
  if (positionals.length !== 1) throw new UsageError('clients show needs exactly one client id')
  const config = await loadConfig(values.config, env).catch((error: unknown) => {
    throw new OperatorError((error as Error).message)
  })
  await withAdminStore(env, async (store) => {
    const client = await store.getClient(positionals[0]!)
    if (client === undefined) throw new OperatorError(`no client ${positionals[0]!}`)
    const quotas = await quotaUses(store, client, config.routes)
    const shown = clientWithoutSecrets(client)
    if (values.json === true) {
      stdout.write(`${JSON.stringify({ ...shown, quotas })}\n`)
      return
    }
    const lines = [
      `client_id:      ${client.id}`,
      `name:           ${client.name}`,
      `scope:          ${client.scopes.join(' ')}`,
      `quota:          ${client.quotaPerMinute === undefined ? 'route defaults' : `${client.quotaPerMinute} a minute on every limited route`}`,
      ...quotas.map(({ route, perMinute, from, used }) => `  ${route}: ${used} of ${perMinute} this minute (${from === 'client' ? 'its own limit' : 'the route\'s default'})`),
      ...(quotas.length === 0 ? ['  (no route of the config has a quota)'] : [])
    ]
    stdout.write(`${lines.join('\n')}\n`)
  })
}
