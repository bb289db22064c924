// What the runner (bench/run.ts, bench/profile.ts) and a target process (bench/target.ts) say to
// each other over IPC, typed once for both sides. A target sends `ready` once it listens, then
// answers each runner message in turn, or sends `error` when it cannot.

import type { Counts } from './counters.ts'

/** Servers with nothing to seed: the upstream, the plain proxy baseline, and it with an empty hook (the ladder). */
export type ServerKind = 'upstream' | 'proxy' | 'proxy-hook'

/**
 * The gateway on each store, seeded with a client and a live token; `cold` has no token LRU; `mix`
 * has a small one, in front of a population of tokens made on request; `shipped` is built as
 * `macgate start` builds it, logging at info to a file; `cluster` keeps its records on a Redis Cluster;
 * `ladder` is a rung of the ladder (bench/rungs.ts), named in its option.
 */
export type GatewayKind = 'gateway-memory' | 'gateway-redis' | 'gateway-cold' | 'gateway-mix' | 'gateway-shipped' | 'gateway-cluster' | 'gateway-ladder'

export type TargetKind = ServerKind | GatewayKind

const GATEWAY_KINDS = new Set<string>(['gateway-memory', 'gateway-redis', 'gateway-cold', 'gateway-mix', 'gateway-shipped', 'gateway-cluster', 'gateway-ladder'] satisfies GatewayKind[])

/** Kinds come in on command lines, as plain strings. */
export function isGatewayKind (kind: string): kind is GatewayKind {
  return GATEWAY_KINDS.has(kind)
}

/**
 * What the runner asks: the target's CPU time so far; of a gateway, fresh authorization codes, its
 * token LRU's counts so far, or a population of `count` tokens, their credentials written to `file`
 * (tens of megabytes: a file is quicker than one IPC message of that size); of any target, to start
 * a counting pass (bench/counters.ts, the promise hook only if `promises`) or to end it.
 */
export type RunnerMessage =
  | { type: 'cpu' }
  | { type: 'count', promises: boolean }
  /** `requests` the pass served and the rung's `label`: for the allocation sites (bench/allocation-sites.ts), when they are on. */
  | { type: 'counted', requests: number, label: string }
  | { type: 'codes', count: number }
  | { type: 'cache' }
  | { type: 'population', count: number, file: string }

/** The token LRU's lookups so far: answered from it, and not. */
export interface CacheStats {
  hits: number
  misses: number
}

/** What the runner needs of a seeded gateway: a client to exchange codes as, and a token to sign with. */
export interface Seed {
  clientId: string
  clientSecret: string
  /** The client's registered redirect URI, the one its codes are bound to. */
  redirectUri: string
  accessToken: string
  macKey: string
}

export interface ServerReady {
  type: 'ready'
  port: number
}

export interface GatewayReady extends ServerReady, Seed {}

export type Ready = ServerReady | GatewayReady

export type TargetMessage =
  | Ready
  | { type: 'cpu', micros: number }
  | { type: 'codes', codes: string[] }
  | ({ type: 'cache' } & CacheStats)
  /** The population is in the file: one `accessToken macKey` line per token; made in `millis`. */
  | { type: 'population', millis: number }
  | { type: 'counting' }
  | ({ type: 'counted' } & Counts)
  | { type: 'error', message: string }

export function isGatewayReady (ready: Ready): ready is GatewayReady {
  return 'accessToken' in ready
}

const RUNNER_TYPES = new Set<string>(['cpu', 'codes', 'cache', 'population', 'count', 'counted'] satisfies Array<RunnerMessage['type']>)
const TARGET_TYPES = new Set<string>(['ready', 'cpu', 'codes', 'cache', 'population', 'counting', 'counted', 'error'] satisfies Array<TargetMessage['type']>)

function typed (message: unknown, types: Set<string>): boolean {
  return typeof message === 'object' && message !== null && 'type' in message && typeof message.type === 'string' && types.has(message.type)
}

/**
 * IPC hands over whatever the other side sent; both sides are ours, so checking the discriminant
 * is enough to tell a message of the protocol from anything else on the channel.
 */
export function isRunnerMessage (message: unknown): message is RunnerMessage {
  return typed(message, RUNNER_TYPES)
}

export function isTargetMessage (message: unknown): message is TargetMessage {
  return typed(message, TARGET_TYPES)
}
