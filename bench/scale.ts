// The processes of the scale-out scenarios: a local Redis Cluster, and `macgate start --workers N`
// as an operator runs it (the real CLI, its workers sharing one port).
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { GatewayReady } from './messages.ts'
import { childNodeArgs, fromSource } from './paths.ts'
import { freePort, pinned, pinning, type Target } from './processes.ts'

const run = promisify(execFile)

async function startClusterNode (dir: string): Promise<{ address: string, stop: () => void }> {
  const port = await freePort()
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--dir', dir]
  const child = spawn(pinning ? 'taskset' : 'redis-server', pinning ? ['-c', '1', 'redis-server', ...args] : args, { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  for await (const chunk of child.stdout!) {
    output += String(chunk)
    if (output.includes('Ready to accept connections')) break
  }
  child.stdout!.resume()
  return { address: `127.0.0.1:${port}`, stop: () => child.kill('SIGKILL') }
}

/** A Redis Cluster of three masters (no replicas), on core 1 like the single Redis; ready when whole. */
export async function startRedisCluster (): Promise<{ seeds: string, stop: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'macgate-bench-cluster-'))
  const nodes: Array<{ address: string, stop: () => void }> = []
  const stop = async (): Promise<void> => {
    for (const node of nodes) node.stop()
    await rm(dir, { recursive: true, force: true })
  }
  try {
    for (let i = 0; i < 3; i++) nodes.push(await startClusterNode(dir))
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((node) => node.address), '--cluster-replicas', '0', '--cluster-yes'])
    for (const node of nodes) {
      const port = node.address.split(':')[1]!
      for (let tries = 0; !(await run('redis-cli', ['-p', port, 'cluster', 'info'])).stdout.includes('cluster_state:ok'); tries++) {
        if (tries > 200) throw new Error(`cluster node ${node.address} never saw the cluster whole`)
        await sleep(50)
      }
    }
  } catch (error) {
    await stop()
    throw error
  }
  return { seeds: nodes.map((node) => node.address).join(','), stop }
}

const CLI = fileURLToPath(new URL(`../gateway/cli.${fromSource ? 'ts' : 'js'}`, import.meta.url))

/** CPU time of a process and its children (the workers), user plus system, in microseconds. */
async function treeCpu (pid: number): Promise<number> {
  const ticks = async (one: number): Promise<number> => {
    const fields = (await readFile(`/proc/${one}/stat`, 'utf8').catch(() => '')).split(') ')[1]?.split(' ') ?? []
    return Number(fields[11] ?? 0) + Number(fields[12] ?? 0)
  }
  const children = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '')).trim().split(' ').filter((one) => one !== '').map(Number)
  const all = await Promise.all([pid, ...children].map(ticks))
  // Clock ticks of 1/100 s on Linux.
  return all.reduce((total, one) => total + one, 0) * 10_000
}

/**
 * `macgate start --workers N` on the Redis of `gateway-redis`, under its key prefix, so that the
 * token `ready` names (seeded there) works on it too. Pinned to core 0 like every server under test
 * (its workers inherit the pinning), so that its CPU per request, summed over the primary and its
 * workers, compares with theirs; on this 2-core machine the load generator has the other core.
 */
export async function startWorkers (count: number, upstream: string, redisUrl: string, ready: GatewayReady): Promise<Target<GatewayReady> & { logFile: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'macgate-bench-workers-'))
  const config = join(dir, 'config.json')
  await writeFile(config, JSON.stringify({ upstream, routes: [{ path: '/api/*', methods: ['GET'], scopes: ['1'], match: 'all' }] }))
  const port = await freePort()
  // Logging as the shipped gateway (10) does, at info into a file: its standard output, which the workers share.
  const logFile = join(dir, 'macgate.log')
  const log = await open(logFile, 'w')
  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: redisUrl, MACGATE_REDIS_PREFIX: 'bench:gateway-redis:', PORT: String(port), HOST: '127.0.0.1', ADMIN_PORT: '0', LOG_LEVEL: 'info' }
  delete env.REDIS_CLUSTER_NODES
  const [command, args] = pinned(0, process.execPath, [...childNodeArgs, CLI, 'start', '--config', config, '--workers', String(count)])
  const child = spawn(command, args, { env, stdio: ['ignore', log.fd, 'pipe'] })
  await log.close()
  let output = ''
  child.stderr!.on('data', (chunk) => { output += String(chunk) })
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
    await rm(dir, { recursive: true, force: true })
  }
  const up = async (): Promise<boolean> => (count === 1 || output.includes(`${count} workers serving`)) && await answers(port)
  for (let waited = 0; !(await up()); waited += 100) {
    if (child.exitCode !== null || waited > 30_000) {
      await stop()
      throw new Error(`macgate start --workers ${count} did not start: ${output}`)
    }
    await sleep(100)
  }
  return { kind: 'gateway-redis', child, ready: { ...ready, port }, cpu: async () => await treeCpu(child.pid!), stop, logFile }
}

/** Any HTTP answer at all: the port is served. */
async function answers (port: number): Promise<boolean> {
  return await fetch(`http://127.0.0.1:${port}/`).then(async (response) => { await response.arrayBuffer(); return true }, () => false)
}
