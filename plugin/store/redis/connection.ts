import { Cluster, Redis, type RedisOptions } from 'ioredis'
import type { Candidates } from './revocation-feed.ts'

/** A single Redis by its URL, or a Redis Cluster by some of its nodes (`host:port`). */
export type RedisTarget = string | { clusterNodes: string[] }

/** Script calls already batched per event-loop turn (per slot on a cluster): kept out of the auto-pipeline. */
const UNPIPELINED = ['macgateUseNonces', 'macgateNonceStats']

/**
 * The client for a target, and where the revocation feed's subscriber may connect. Lazy: the
 * store's `connect` opens it.
 */
export function openClient (target: RedisTarget, commandTimeout: number, redisOptions: RedisOptions): { client: Redis | Cluster, subscriberCandidates: Candidates } {
  // No offline queue: while Redis is away a command fails at once instead of piling up.
  const options: RedisOptions = {
    enableAutoPipelining: true,
    // Already one call per event-loop turn (per slot on a cluster): a pipeline would only add cost.
    // (The stats script, many keys of one tag, is kept out too: the pipeline would group it by its first.)
    autoPipeliningIgnoredCommands: UNPIPELINED,
    enableOfflineQueue: false,
    lazyConnect: true,
    commandTimeout,
    maxRetriesPerRequest: 1,
    retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    // How long a disconnect waits for a socket to end before destroying it: ioredis's 2 s kept a
    // CLI that found Redis unreachable alive 2 s after its answer.
    disconnectTimeout: 200,
    ...redisOptions
  }
  if (typeof target === 'string') {
    const redis = new Redis(target, options)
    return { client: redis, subscriberCandidates: () => [redis.options] }
  }
  // Seeds are addresses only: every node's connection takes redisOptions below.
  const seeds = target.clusterNodes.map(parseNode)
  const cluster = new Cluster(seeds, {
    enableAutoPipelining: true,
    autoPipeliningIgnoredCommands: UNPIPELINED,
    enableOfflineQueue: false,
    lazyConnect: true,
    // The cluster client follows MOVED and a failover's new topology by itself.
    // Node connections keep ioredis's own offline queue and retries (it opens them on demand and
    // queues while they connect); the command timeout bounds every command.
    redisOptions: nodeOptions(options),
    clusterRetryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    slotsRefreshTimeout: commandTimeout
  })
  // Any node hears a plain PUBLISH: the ones the client knows now, else the seeds.
  const subscriberCandidates = (): RedisOptions[] => {
    const known = cluster.nodes('all').map((node) => ({ ...options, host: node.options.host, port: node.options.port }))
    return known.length > 0 ? known : seeds.map((seed) => ({ ...options, ...seed }))
  }
  return { client: cluster, subscriberCandidates }
}

/** The options a cluster's node connections take: ours, less what the cluster client manages itself. */
function nodeOptions ({ enableOfflineQueue: _queue, retryStrategy: _retry, lazyConnect: _lazy, enableAutoPipelining: _pipelining, ...options }: RedisOptions): RedisOptions {
  return options
}

/** `host:port` (or `[v6]:port`) as a node's address. */
function parseNode (node: string): { host: string, port: number } {
  const at = node.lastIndexOf(':')
  const host = node.slice(0, at).replace(/^\[(.*)\]$/, '$1')
  const port = Number(node.slice(at + 1))
  if (at < 1 || !Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`a cluster node is host:port, not ${JSON.stringify(node)}`)
  return { host, port }
}
