import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import { freePort } from './redis.ts'

const run = promisify(execFile)

export interface ClusterNode {
  port: number
  /** `host:port`, as REDIS_CLUSTER_NODES lists it. */
  address: string
  process: ChildProcess
}

export interface TestCluster {
  /** Every node's `host:port`, comma-separated: a value for REDIS_CLUSTER_NODES. */
  seeds: string
  nodes: ClusterNode[]
  /** The node now serving `key` as master. */
  masterOf (key: string): Promise<ClusterNode>
  /** Kills a node at once (SIGKILL), as a crash would. */
  kill (node: ClusterNode): Promise<void>
  /** Waits until every slot is served again (`cluster_state:ok` on every live node). */
  settled (timeoutMs?: number): Promise<void>
}

async function cli (port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args])
  return stdout
}

async function startNode (dir: string): Promise<ClusterNode> {
  const port = await freePort()
  const child = spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`),
    // A short node timeout: a killed master's replica takes over within a few seconds.
    '--cluster-node-timeout', '1000', '--dir', dir,
    // Replicas sync at once, and one may take over however long its link has been down.
    '--repl-diskless-sync-delay', '0', '--cluster-replica-validity-factor', '0'
  ], { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  for await (const chunk of child.stdout!) {
    output += String(chunk)
    if (output.includes('Ready to accept connections')) break
  }
  child.stdout!.resume()
  return { port, address: `127.0.0.1:${port}`, process: child }
}

/**
 * A Redis Cluster of the test's own: 3 masters and 3 replicas on free loopback ports, created
 * with `redis-cli --cluster create`, ready when every node reports `cluster_state:ok`; killed
 * and its files removed when the test ends.
 */
export async function startRedisCluster (t: Test): Promise<TestCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'macgate-cluster-'))
  const nodes: ClusterNode[] = []
  t.teardown(async () => {
    for (const node of nodes) node.process.kill('SIGKILL')
    await rm(dir, { recursive: true, force: true })
  })
  for (let i = 0; i < 6; i++) nodes.push(await startNode(dir))
  await run('redis-cli', ['--cluster', 'create', ...nodes.map((node) => node.address), '--cluster-replicas', '1', '--cluster-yes'])

  const alive = (): ClusterNode[] => nodes.filter((node) => node.process.exitCode === null && node.process.signalCode === null)
  /** Whether `node` sees the cluster whole, and every slot served by a master that is alive. */
  const whole = async (node: ClusterNode): Promise<boolean> => {
    const info = await cli(node.port, 'cluster', 'info').catch(() => '')
    if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384')) return false
    const live = new Set(alive().map((one) => one.address))
    const shards = (await cli(node.port, 'cluster', 'nodes').catch(() => '')).trim().split('\n')
    return shards.every((line) => {
      const [, address = '', flags = '', , , , , , ...ranges] = line.split(' ')
      return !flags.includes('master') || ranges.length === 0 || live.has(address.split('@')[0]!)
    })
  }
  const settled = async (timeoutMs = 20_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const views = await Promise.all(alive().map(whole))
      if (views.every(Boolean)) return
      if (Date.now() > deadline) throw new Error(`the test cluster did not settle: ${await cli(alive()[0]!.port, 'cluster', 'nodes')}`)
      await sleep(100)
    }
  }
  await settled()
  // Every replica has its copy before a test may kill its master.
  for (const node of nodes) {
    const deadline = Date.now() + 20_000
    for (;;) {
      const replication = await cli(node.port, 'info', 'replication')
      if (replication.includes('role:master') || replication.includes('master_link_status:up')) break
      if (Date.now() > deadline) throw new Error(`replica ${node.address} never synced`)
      await sleep(50)
    }
  }
  return {
    seeds: nodes.map((node) => node.address).join(','),
    nodes,
    settled,
    async masterOf (key) {
      const slot = Number((await cli(alive()[0]!.port, 'cluster', 'keyslot', key)).trim())
      const shards = (await cli(alive()[0]!.port, 'cluster', 'nodes')).trim().split('\n')
      for (const line of shards) {
        const [, address, flags, , , , , , ...ranges] = line.split(' ')
        if (!flags!.includes('master') || flags!.includes('fail')) continue
        for (const range of ranges) {
          const [from, to = from] = range.split('-').map(Number)
          if (slot >= from! && slot <= to!) return nodes.find((node) => address!.startsWith(node.address))!
        }
      }
      throw new Error(`no master serves slot ${slot}`)
    },
    async kill (node) {
      const exited = new Promise((resolve) => node.process.once('exit', resolve))
      node.process.kill('SIGKILL')
      await exited
    }
  }
}
