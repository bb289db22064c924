import { connect } from 'node:net'
import { MemoryStore, RedisStore, type Store } from '../../plugin/index.ts'

function maxNonces (value: string): number {
  const count = Number(value)
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`MACGATE_MAX_NONCES must be a whole number of at least 1, not ${value}`)
  return count
}

/** The shared store the environment names, if any: `REDIS_CLUSTER_NODES` (seed nodes), else `REDIS_URL`. */
export function sharedStoreName (env: NodeJS.ProcessEnv = process.env): 'REDIS_CLUSTER_NODES' | 'REDIS_URL' | undefined {
  if (env.REDIS_CLUSTER_NODES !== undefined && env.REDIS_CLUSTER_NODES !== '') return 'REDIS_CLUSTER_NODES'
  if (env.REDIS_URL !== undefined && env.REDIS_URL !== '') return 'REDIS_URL'
  return undefined
}

/** A REDIS_URL as it may be shown: without its password (in the user part or a `password` parameter). */
export function redactRedisUrl (value: string): string {
  if (!URL.canParse(value)) return value.includes('@') ? `***@${value.slice(value.lastIndexOf('@') + 1)}` : value
  const url = new URL(value)
  if (url.password === '' && !url.searchParams.has('password')) return value
  url.password = ''
  if (url.searchParams.has('password')) url.searchParams.set('password', '***')
  return url.toString()
}

const REDIS_URL_FORM = 'redis://[user:password@]host[:port][/db], rediss://... for TLS, or a Unix socket path'

/**
 * The REDIS_URL as ioredis will read it, or a RangeError saying what is wrong, before any connection
 * is tried: ioredis takes almost anything (`http://h:6379` as the host `http`, `garbage` as a host
 * name) and only fails later, after its retries, with "Connection is closed.".
 */
export function checkRedisUrl (value: string): string {
  const shown = redactRedisUrl(value)
  // ioredis reads a value starting with `/` as a Unix socket path.
  if (value.startsWith('/') && !value.startsWith('//')) return value
  // `host:6379` parses as a URL of the scheme `host`: without `://` it is no URL here.
  if (!value.includes('://') || !URL.canParse(value)) throw new RangeError(`REDIS_URL must be ${REDIS_URL_FORM}; ${shown} is not a URL`)
  const url = new URL(value)
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new RangeError(`REDIS_URL must be ${REDIS_URL_FORM}; ${shown} has the scheme ${url.protocol.slice(0, -1)}`)
  if (url.hostname === '') throw new RangeError(`REDIS_URL must be ${REDIS_URL_FORM}; ${shown} names no host`)
  if (url.pathname !== '' && url.pathname !== '/' && !/^\/[0-9]+$/.test(url.pathname)) throw new RangeError(`REDIS_URL must be ${REDIS_URL_FORM}; the path of ${shown} must be a database number`)
  return value
}

/** `host:port` or `[v6]:port`, refused (with the entry named) before any connection is tried. */
const NODE = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]{1,5})$/

/** The seed nodes of REDIS_CLUSTER_NODES, each checked, or a RangeError naming the bad entry. */
export function clusterNodesOf (value: string): string[] {
  const nodes = value.split(',').map((node) => node.trim()).filter((node) => node !== '')
  if (nodes.length === 0) throw new RangeError(`REDIS_CLUSTER_NODES must list host:port,host:port,...; ${JSON.stringify(value)} lists no node`)
  for (const node of nodes) {
    const port = Number(NODE.exec(node)?.[1] ?? 0)
    if (port < 1 || port > 65535) throw new RangeError(`REDIS_CLUSTER_NODES: a cluster node is host:port, not ${JSON.stringify(node)} (the list is host:port,host:port,... without a scheme)`)
  }
  return nodes
}

/** The store the environment names: a Redis Cluster, a single Redis, or the embedded one without either. */
export async function openStore (env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  const shared = sharedStoreName(env)
  if (shared === undefined) return new MemoryStore(env.MACGATE_MAX_NONCES === undefined ? {} : { maxNonces: maxNonces(env.MACGATE_MAX_NONCES) })
  const prefix = env.MACGATE_REDIS_PREFIX ?? 'macgate:'
  if (shared === 'REDIS_URL') return await new RedisStore(checkRedisUrl(env.REDIS_URL!), { prefix }).connect()
  // clusterNodesOf refuses every entry RedisStore would (with the variable's name), before it is made.
  return await new RedisStore({ clusterNodes: clusterNodesOf(env.REDIS_CLUSTER_NODES!) }, { prefix }).connect()
}

/** What ioredis says when a connection ended without saying why. */
const UNTOLD = ['Connection is closed.', 'None of startup nodes is available', 'Failed to refresh slots cache.']

/** Node's text names the cause (`connect ECONNREFUSED 127.0.0.1:1`); add the code where it does not. */
function telling (error: Error): string {
  const code = (error as NodeJS.ErrnoException).code
  return code === undefined || error.message.includes(code) ? error.message : `${error.message} (${code})`
}

/** Whether a TCP connection to `host:port` opens within `ms`: undefined if so, else why not. */
async function tcpProblem (host: string, port: number, ms = 1500): Promise<string | undefined> {
  return await new Promise((resolve) => {
    const socket = connect({ host, port })
    const done = (problem: string | undefined): void => {
      socket.destroy()
      resolve(problem)
    }
    socket.setTimeout(ms, () => done(`no answer within ${ms} ms`))
    socket.once('connect', () => done(undefined))
    socket.once('error', (error) => done(telling(error)))
  })
}

function hostAndPort (node: string): { host: string, port: number } {
  const at = node.lastIndexOf(':')
  return { host: node.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(node.slice(at + 1)) }
}

/**
 * One line for a store that could not be reached at start, naming where (the URL without its
 * password) and why (ECONNREFUSED, ENOTFOUND, WRONGPASS, ...). A connection that ended without a
 * reason (a cluster's seeds do not pass theirs on) is tried again by plain TCP, seed by seed, to
 * find one; a seed that answers TCP leaves ioredis's own words.
 */
export async function unreachableMessage (error: unknown, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const shared = sharedStoreName(env) ?? 'REDIS_URL'
  const where = shared === 'REDIS_URL' ? `REDIS_URL=${redactRedisUrl(env.REDIS_URL ?? '')}` : `REDIS_CLUSTER_NODES=${env.REDIS_CLUSTER_NODES!}`
  let cause = (error as { cause?: unknown }).cause ?? error
  const lastNodeError = (cause as { lastNodeError?: unknown }).lastNodeError
  if (lastNodeError instanceof Error && !UNTOLD.includes(lastNodeError.message)) cause = lastNodeError
  const reason = cause instanceof Error ? telling(cause) : String(cause)
  if (!UNTOLD.includes(reason)) return `cannot reach Redis at ${where} (${reason})`
  const nodes = shared === 'REDIS_URL'
    ? (URL.canParse(env.REDIS_URL ?? '') ? [new URL(env.REDIS_URL!)].map((url) => `${url.hostname}:${url.port === '' ? 6379 : url.port}`) : [])
    : clusterNodesOf(env.REDIS_CLUSTER_NODES!)
  const problems = await Promise.all(nodes.map(async (node) => {
    const { host, port } = hostAndPort(node)
    const problem = await tcpProblem(host, port)
    return problem === undefined ? undefined : `${node}: ${problem}`
  }))
  const found = problems.filter((problem) => problem !== undefined)
  return `cannot reach Redis at ${where} (${found.length === 0 ? reason : found.join('; ')})`
}
