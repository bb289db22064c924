// Where a request's CPU goes, by step of the gateway's path: each profile sample is charged to the
// step its own function belongs to, and the busy time is divided by the requests served.

export interface ProfileNode { id: number, callFrame: { functionName: string, url: string, lineNumber: number } }
export interface Profile { nodes: ProfileNode[], samples: number[], timeDeltas: number[] }

/** A function as the profile tables name it: its name, then where it lives (a package's path, or ours from plugin/, gateway/ or bench/) and its line. */
export function functionLabel ({ functionName, url, lineNumber }: ProfileNode['callFrame']): string {
  const where = url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(dist\/)?(plugin|gateway|bench)\//, '$2/')
  return `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`
}

export const STEPS = [
  'parse the MAC header',
  'token cache',
  'verify (compare, freshness, bindings, hook)',
  'crypto (HMAC, hashes, unsealing)',
  'store (nonce, token reads, Redis client)',
  'route check and upstream headers',
  'forward (http-proxy, reply-from, undici)',
  'fastify (routing, hooks, replies)',
  'Node (sockets, HTTP parsing, event loop)',
  'garbage collection'
] as const
export type Step = typeof STEPS[number]

const PACKAGE = /node_modules\/((@[^/]+\/)?[^/]+)/

function stepOf ({ url, functionName }: ProfileNode['callFrame']): Step | 'idle' {
  if (functionName === '(idle)') return 'idle'
  if (functionName === '(garbage collector)') return 'garbage collection'
  if (url.includes('/plugin/mac/header')) return 'parse the MAC header'
  if (url.includes('/plugin/mac/token-cache')) return 'token cache'
  if (url.includes('/plugin/mac/') || url.includes('/plugin/http/') || url.includes('/plugin/store/pending')) return 'verify (compare, freshness, bindings, hook)'
  if (url.startsWith('node:internal/crypto')) return 'crypto (HMAC, hashes, unsealing)'
  if (url.includes('/plugin/store/')) return 'store (nonce, token reads, Redis client)'
  if (url.includes('/gateway/')) return 'route check and upstream headers'
  const owner = PACKAGE.exec(url)?.[1]
  if (owner === 'lru-cache') return 'token cache'
  if (owner === 'ioredis' || owner === 'redis-parser' || owner === 'denque' || owner === 'cluster-key-slot') return 'store (nonce, token reads, Redis client)'
  if (owner === '@fastify/http-proxy' || owner === '@fastify/reply-from' || owner === 'undici') return 'forward (http-proxy, reply-from, undici)'
  if (owner !== undefined) return 'fastify (routing, hooks, replies)'
  return 'Node (sockets, HTTP parsing, event loop)'
}

/**
 * Each sample's time (µs, its `timeDeltas` entry) summed by what `keyOf` makes of its function:
 * the one walk over a profile's samples that every table here starts from. A sample whose key is
 * undefined is left out.
 */
export function timeBy<K> (profile: Profile, keyOf: (frame: ProfileNode['callFrame']) => K | undefined): Map<K, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const micros = new Map<K, number>()
  profile.samples.forEach((id, index) => {
    const key = keyOf(byId.get(id)!.callFrame)
    if (key !== undefined) micros.set(key, (micros.get(key) ?? 0) + (profile.timeDeltas[index] ?? 0))
  })
  return micros
}

/** The sum of a table's values (its microseconds). */
export function sumOf<K> (micros: Map<K, number>): number {
  return [...micros.values()].reduce((sum, value) => sum + value, 0)
}

/** Microseconds of CPU per request in each step. */
export function stepsPerRequest (profile: Profile, requests: number): Map<Step, number> {
  const busy = timeBy(profile, (frame) => { const step = stepOf(frame); return step === 'idle' ? undefined : step })
  return new Map(STEPS.map((step) => [step, (busy.get(step) ?? 0) / Math.max(1, requests)]))
}

export function stepsTable (steps: Map<Step, number>): string {
  const total = sumOf(steps)
  return [...steps].map(([step, micros]) => `${micros.toFixed(1).padStart(6)} µs  ${step}`).concat(`${total.toFixed(1).padStart(6)} µs  total`).join('\n')
}
