// `npm run bench -- --parts`: each part of a verified request timed alone, in this one process, in a
// loop: CPU µs per call (least of several passes: the machine is shared, and others only slow a
// pass down) and V8 heap bytes per call (bench/counters.ts, which the noise does not move). Each
// part is the real function the gateway calls, reached through its module (the only bench file
// the layer rules let past the package entries: it times parts, not the package), and, where the
// part is mostly a library's or Node's call, that call alone beside it: the floor under the part.
// The ladder (bench/ladder.ts) measures the same parts in place; the README sets the two side by side.
import { createHmac, createSecretKey, hash, timingSafeEqual } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { Histogram, Registry } from 'prom-client'
import { Redis, type Command } from 'ioredis'
import { Pool } from 'undici'
import type { FastifyInstance } from 'fastify'
import { makeNonce, signRequest } from '../plugin/client/index.ts'
import { grantIdOf, hashSecret, openMacKey } from '../plugin/access/credentials.ts'
import { parseMacHeader } from '../plugin/mac/header.ts'
import { constantTimeEqual } from '../plugin/access/constant-time.ts'
import { canonicalQuery, signingKeyOf, stringToSign } from '../plugin/mac/signature.ts'
import { TokenCache } from '../plugin/mac/token-cache.ts'
import type { MacVerifier } from '../plugin/mac/verify.ts'
import { NonceKeys, type NonceUse } from '../plugin/store/nonce-key.ts'
import type { Pending } from '../plugin/store/pending.ts'
import { grantAccessToken, MemoryStore, Metrics, RedisStore, registerClient, ScopeRegistry, type MacIdentity, type Store } from '../plugin/index.ts'
import { registerAccessLog } from '../gateway/operator/access-log.ts'
import { registerRequestMetrics } from '../gateway/operator/request-metrics.ts'
import { upstreamHeaders } from '../gateway/open-api/upstream-request.ts'
import { pathRefusal, RouteTable } from '../gateway/open-api/proxy.ts'
import { splitPathAndQuery } from '../plugin/http/path-and-query.ts'
import { buildGateway, logDestination, parseConfig, UPSTREAM_POOL } from '../gateway/index.ts'
import { RequestCounters } from './counters.ts'
import { resultsDirectory } from './paths.ts'
import { startRedis, startServer } from './processes.ts'
import { PATH, quick } from './scenarios.ts'

/** Calls per pass, and passes per part: the least pass's CPU per call is the part's figure. */
const CALLS = quick ? 2_000 : 20_000
const PASSES = quick ? 3 : 9
/** Requests in one event-loop turn that share a Redis nonce batch: the sizes a turn really has (the ladder's 50 connections). */
const BATCH_SIZES = [1, 5, 20, 50]

/** One part: what it is, the ladder's rung it belongs to, and a call (given the call's number). */
export interface Part {
  rung: string
  name: string
  /** The library's or Node's call alone, outside macgate: the floor under a part. */
  floor?: boolean
  /** Calls in a pass, when the part's own unit is not one call (a batch answers several requests). */
  perCall?: number
  call: (i: number) => unknown
  /** Before each pass, untimed: what its calls use up (fresh nonces). */
  prepare?: () => void
  /** For parts that wait on I/O: the whole pass, awaited (its CPU is this process's, the server's part). */
  pass?: (calls: number) => Promise<void>
}

export interface PartResult {
  rung: string
  name: string
  floor: boolean
  leastCpuMicros: number
  medianCpuMicros: number
  heapBytes: number
}

const cpuNow = (): number => {
  const { user, system } = process.cpuUsage()
  return user + system
}

/**
 * Where each call's result goes: kept where the optimiser cannot see it unused, so that it cannot
 * leave out what a call makes (the gateway keeps what these parts make).
 */
export let lastResult: unknown

/** One pass of `calls` calls: its preparation first, untimed, then the calls (awaited, for a part that waits on I/O). */
async function onePass (part: Part, calls: number, measure: { start: () => void, stop: () => void }): Promise<void> {
  part.prepare?.()
  measure.start()
  if (part.pass !== undefined) await part.pass(calls)
  else for (let i = 0; i < calls; i++) lastResult = part.call(i)
  measure.stop()
}

/** The part's least and median CPU µs per call over the passes, and its heap bytes per call in a pass of its own. */
async function timePart (part: Part, counters: RequestCounters): Promise<PartResult> {
  const unit = part.perCall ?? 1
  const nothing = { start: () => {}, stop: () => {} }
  await onePass(part, CALLS, nothing) // warm: the JIT, the caches
  const perCall: number[] = []
  for (let pass = 0; pass < PASSES; pass++) {
    let started = 0
    await onePass(part, CALLS, { start: () => { started = cpuNow() }, stop: () => { perCall.push((cpuNow() - started) / (CALLS * unit)) } })
  }
  let bytes = 0
  await onePass(part, CALLS, { start: () => { counters.start(false) }, stop: () => { bytes = counters.stop().bytes } })
  perCall.sort((a, b) => a - b)
  return { rung: part.rung, name: part.name, floor: part.floor === true, leastCpuMicros: perCall[0]!, medianCpuMicros: perCall[Math.floor(perCall.length / 2)]!, heapBytes: bytes / (CALLS * unit) }
}

interface Fixture {
  app: FastifyInstance
  verifier: MacVerifier
  accessToken: string
  macKey: string
  identity: MacIdentity
  /** CALLS requests, each signed with a nonce of its own, made before any pass (signing is the client's work). */
  signed: Array<{ authorization: string, nonce: string, mac: string }>
}

const HOST = '127.0.0.1:8080'

/** `count` requests for PATH, each signed with a fresh nonce, as a client signs them. */
function signedRequests (accessToken: string, macKey: string, count: number): Fixture['signed'] {
  return Array.from({ length: count }, () => {
    const nonce = makeNonce()
    const authorization = signRequest({ accessToken, macKey, method: 'GET', url: `http://${HOST}${PATH}`, nonce })
    return { authorization, nonce, mac: parseMacHeader(authorization).mac }
  })
}

async function fixture (store: Store, calls: number): Promise<Fixture> {
  const app = await buildGateway({ store, config: parseConfig({ upstream: 'http://127.0.0.1:1', routes: [{ path: '/api/*', methods: ['GET'], scopes: ['1'] }] }), logger: false })
  await app.ready()
  const { client } = await registerClient(store, new ScopeRegistry(), { name: 'parts', redirectUris: ['https://parts.example/callback'], scope: '1 3' })
  const { accessToken, macKey } = await grantAccessToken(app.macgate, { clientId: client.id, userId: 'parts-user', scope: ['1', '3'] })
  const signed = signedRequests(accessToken, macKey, calls)
  const verifier = app.macVerifier
  const identity = await verifier.verify({ method: 'GET', host: HOST, path: PATH, query: '', authorization: signedRequests(accessToken, macKey, 1)[0]!.authorization })
  return { app, verifier, accessToken, macKey, identity, signed }
}

/** L2: the route check's own work: the path, its route, the `..` test (the hook around it is Fastify's). */
function routeParts (): Part[] {
  const rung = 'L2 the route check'
  const rule = { path: '/api/*', methods: ['GET'], scopes: ['1'], match: 'all' as const }
  const table = new RouteTable([rule, { ...rule, path: '/quota/*' }, { ...rule, path: '/user/profile' }], () => () => {}, () => ({}) as never)
  const url = `${PATH}?a=1`
  return [
    { rung, name: 'path, route and .. check', call: () => { const { path } = splitPathAndQuery(url); return table.match(path) !== undefined && pathRefusal(path) === undefined } }
  ]
}

/** L3: the MAC check's parts, with the hot LRU and embedded nonces (as rung L3 runs). */
function macCheckParts ({ verifier, accessToken, macKey, signed }: Fixture, fresh: () => Fixture['signed']): Part[] {
  const rung = 'L3 the MAC check'
  const { authorization, nonce, mac } = signed[0]!
  const header = parseMacHeader(authorization)
  const text = stringToSign({ nonce, method: 'GET', host: HOST, path: PATH, query: canonicalQuery('') })
  const key = signingKeyOf(macKey)
  const rawKey = createSecretKey(Buffer.from(macKey, 'utf8'))
  // The inputs of the two one-shot hashes the verifier's mac makes (plugin/access/hmac-key.ts), made once: pad ‖ text, pad ‖ digest.
  const innerInput = Buffer.concat([Buffer.alloc(64, 0x36), Buffer.from(text, 'utf8')])
  const outerInput = Buffer.alloc(84, 0x5c)
  const nonceKeys = new NonceKeys('parts secret')
  const tokenHash = hashSecret('parts token')
  const memory = new MemoryStore()
  const now = Date.now()
  const minute = Math.floor(now / 60_000)
  let round = 0
  let requests = signed
  return [
    { rung, name: 'header parse', call: () => parseMacHeader(authorization) },
    { rung, name: 'string to sign (no query)', call: () => stringToSign({ nonce, method: 'GET', host: HOST, path: PATH, query: canonicalQuery('') }) },
    { rung, name: 'HMAC-SHA1 over it (the token\'s prepared key)', call: () => key.digest(text, 'base64') },
    { rung, name: 'two one-shot SHA-1 hashes alone (crypto.hash: pad and text, pad and digest)', floor: true, call: () => hash('sha1', innerInput, 'binary') + hash('sha1', outerInput, 'base64') },
    { rung, name: 'createHmac alone (KeyObject, base64): the HMAC the verifier made before', floor: true, call: () => createHmac('sha1', rawKey).update(text).digest('base64') },
    { rung, name: 'mac comparison', call: () => constantTimeEqual(mac, header.mac) },
    { rung, name: 'timingSafeEqual alone (two 20-byte buffers)', floor: true, call: () => timingSafeEqual(Buffer.alloc(20), Buffer.alloc(20)) },
    { rung, name: 'token LRU lookup (hit)', call: () => verifier.cache.lookup(accessToken, now) },
    { rung, name: 'nonce keyed hash', call: (i) => nonceKeys.use(tokenHash, `${i}:${minute}`, minute, 120) },
    { rung, name: 'embedded nonce check', prepare: () => { round++ }, call: (i) => memory.useNonce(nonceKeys.use(tokenHash, `${round}-${i}:${minute}`, minute, 120)) },
    {
      rung,
      name: 'the whole check (verify, hot LRU, embedded nonces)',
      // Each pass spends fresh nonces: a replay would be refused before the nonce check.
      prepare: () => { requests = fresh() },
      call: (i) => verifier.verify({ method: 'GET', host: HOST, path: PATH, query: '', authorization: requests[i]!.authorization })
    }
  ]
}

/**
 * L4: the upstream header rewrite, on a copy of a signed request's headers as reply-from hands
 * them; and what undici does with the headers it adds: the same requests sent over undici with the
 * gateway's pool options to an upstream in a process of its own, as they came and as rewritten
 * (the difference is undici's work for the five headers: validating, copying and writing them).
 */
function headerParts ({ identity, signed }: Fixture, upstream: string): Part[] {
  const rung = 'L4 the header rewrite'
  // As Node makes a request's headers (one property at a time, onto `{}`) and reply-from copies
  // them (a spread, Connection taken out): the shapes V8 gives them are what the rewrite meets.
  const received: Record<string, string> = {}
  for (const [name, value] of [['host', 'localhost:3000'], ['user-agent', 'autocannon'], ['accept', '*/*'], ['authorization', signed[0]!.authorization]] as const) received[name] = value
  const incoming = { ...received }
  const options = { forwardMethodOverride: false }
  const pool = new Pool(upstream, UPSTREAM_POOL)
  const send = async (headers: Record<string, string | undefined>): Promise<void> => {
    const { body } = await pool.request({ method: 'GET', path: PATH, headers })
    await body.dump()
  }
  const rewritten = upstreamHeaders(identity, '127.0.0.1', { ...incoming }, options) as Record<string, string | undefined>
  return [
    { rung, name: 'upstream headers (on a copy)', call: () => upstreamHeaders(identity, '127.0.0.1', { ...incoming }, options) },
    { rung, name: 'the copy alone (what reply-from makes anyway)', floor: true, call: () => ({ ...incoming }) },
    { rung, name: 'undici request, the headers as they came (50 a turn)', floor: true, call: () => {}, pass: async (calls) => { await inTurns(calls, 50, async () => { await send(incoming) }) } },
    { rung, name: 'undici request, the headers rewritten (50 a turn)', floor: true, call: () => {}, pass: async (calls) => { await inTurns(calls, 50, async () => { await send(rewritten) }) } }
  ]
}

/** A stand-in for the Fastify instance a hook registers on: it keeps the hook, so that the part calls it alone. */
function hookOf (register: (app: FastifyInstance) => void, log?: pino.Logger): (request: unknown, reply: unknown, done: () => void) => void {
  let hook: ((request: unknown, reply: unknown, done: () => void) => void) | undefined
  const app = {
    log,
    decorateRequest: () => {},
    addHook: (name: string, fn: typeof hook) => { if (name === 'onResponse') hook = fn }
  }
  register(app as unknown as FastifyInstance)
  if (hook === undefined) throw new Error('no onResponse hook was registered')
  return hook
}

/** L5: the request duration histogram's observation; prom-client's own observe beside it. */
function metricsParts (): Part[] {
  const rung = 'L5 request metrics'
  const registry = new Registry()
  const observe = hookOf((app) => { registerRequestMetrics(app, new Metrics(registry).requestDuration) })
  const request = { openApiRoute: '/api/*', method: 'GET' }
  const reply = { statusCode: 200, elapsedTime: 1.234 }
  const done = (): void => {}
  const plain = new Histogram({ name: 'parts_plain_seconds', help: 'parts', labelNames: ['route', 'method', 'status_class'] as const, registers: [registry], buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] })
  const child = plain.labels('/api/*', 'GET', '2xx')
  return [
    { rung, name: 'request-metrics observe (the hook)', call: () => observe(request, reply, done) },
    { rung, name: 'prom-client child.observe alone', floor: true, call: () => child.observe(0.001234) }
  ]
}

/** L6: the access line at info into a file through the shipped log destination; pino's own line beside it. */
function accessLogParts (directory: string): Part[] {
  const rung = 'L6 the access log'
  const log = pino({ level: 'info' }, logDestination(join(directory, 'access.log')))
  const write = hookOf((app) => { registerAccessLog(app) }, log)
  const request = { method: 'GET', url: PATH, macIdentity: { clientId: '2882303761517520000' }, macRejection: null }
  const reply = { statusCode: 200, elapsedTime: 1.234 }
  const done = (): void => {}
  const bare = pino({ level: 'info' }, logDestination(join(directory, 'bare.log')))
  return [
    { rung, name: 'access line (the hook, into a file)', call: () => write(request, reply, done) },
    { rung, name: 'pino info of the same fields alone', floor: true, call: () => bare.info({ method: 'GET', path: PATH, status: 200, ms: 1.23, client: '2882303761517520000' }, 'request') }
  ]
}

/** Five absent keys: a turn's token reads as the store sends them. */
const TURN_KEYS = ['parts:absent:1', 'parts:absent:2', 'parts:absent:3', 'parts:absent:4', 'parts:absent:5']

/** Waits for the turn's batches: as many requests as `size` in one turn, then the next turn. */
async function inTurns (calls: number, size: number, one: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < calls; i += size) {
    const turn: Array<Promise<unknown>> = []
    for (let j = i; j < Math.min(calls, i + size); j++) turn.push(one(j))
    await Promise.all(turn)
  }
}

/** A socket of its own to Redis, no client library: one PING and its +PONG, a round trip at a time. */
async function bareRoundTrips (url: string): Promise<{ ping: () => Promise<void>, close: () => void }> {
  const { hostname, port } = new URL(url)
  const socket: Socket = connect(Number(port), hostname)
  socket.setNoDelay(true)
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  let answered: (() => void) | undefined
  socket.on('data', () => {
    const done = answered
    answered = undefined
    done?.()
  })
  return {
    ping: async () => { await new Promise<void>((resolve) => { answered = resolve; socket.write('PING\r\n') }) },
    close: () => { socket.destroy() }
  }
}

/** The one command the store sends for what `send` makes it do: its name and its arguments, as ioredis keeps them. */
async function sentByStore (store: RedisStore, send: () => Promise<void>): Promise<{ name: string, args: Array<string | Buffer | number> }> {
  // The parts' store is on a single Redis.
  const client = store.redis as Redis
  const sendCommand = client.sendCommand
  let sent: Command | undefined
  client.sendCommand = (...args: Parameters<typeof sendCommand>) => {
    sent ??= args[0]
    return sendCommand.apply(client, args)
  }
  try {
    await send()
  } finally {
    client.sendCommand = sendCommand
  }
  if (sent === undefined) throw new Error('the store sent no command')
  // ioredis flattened the arguments as it made the command.
  return { name: sent.name, args: sent.args as Array<string | Buffer | number> }
}

/**
 * L7 and L9: the Redis store's parts, against a real Redis: the nonce batch, the quota count, a
 * token read on a miss. Under L7, the floor of any batch: one round trip to Redis, through ioredis
 * and through a bare socket (a write, the wait, a read), paid once a turn and shared by its requests.
 */
async function redisParts (store: RedisStore, redis: Redis, { accessToken, macKey, app }: Fixture, bare: { ping: () => Promise<void> }): Promise<Part[]> {
  const nonceKeys = new NonceKeys('parts secret')
  const tokenHash = hashSecret('parts token')
  const minute = Math.floor(Date.now() / 60_000)
  let pass = 0
  let uses: NonceUse[] = []
  const batches: Part[] = BATCH_SIZES.map((size) => ({
    rung: 'L7 Redis nonces',
    name: `Redis nonce batch, ${size} a turn (per request)`,
    call: () => {},
    // Fresh nonces, made before the pass: their keyed hash is the check's part (L3), not the batch's.
    prepare: () => {
      const tag = pass++
      uses = Array.from({ length: CALLS }, (_, i) => nonceKeys.use(tokenHash, `${tag}-${i}:${minute}`, minute, 120))
    },
    // As the MAC hook waits (plugin/mac/hook.ts): each request's answer delivered to a receiver,
    // no `then`, no promise of its own (one receiver a turn here, where the hook makes one a
    // request); the pass's one promise a turn only waits for the turn's last answer.
    pass: async (calls) => {
      for (let i = 0; i < calls; i += size) {
        await new Promise<void>((resolve, reject) => {
          let left = Math.min(size, calls - i)
          const receiver = { fulfilled: (): void => { if (--left === 0) resolve() }, rejected: reject }
          for (let j = i; j < i + size && j < calls; j++) (store.useNonce(uses[j]!) as Pending<boolean>).deliver(receiver)
        })
      }
    }
  }))
  // The batch's own call through ioredis's API: a turn's five nonces as the store writes them
  // (caught once as the store sends them), one EVALSHA a turn, per request: the library's floor.
  const batchCall = await sentByStore(store, async () => { await Promise.all(Array.from({ length: 5 }, async (_, i) => await store.useNonce(nonceKeys.use(tokenHash, `call-${i}:${minute}`, minute, 120)))) })
  const quota = {
    rung: 'L7 Redis nonces',
    name: 'quota count with the nonce, 5 a turn (per request)',
    call: () => {},
    pass: async (calls: number) => {
      const tag = pass++
      await inTurns(calls, 5, async (i) => await store.useCountedNonce(nonceKeys.use(tokenHash, `${tag}-${i}:${minute}`, minute, 120), { name: `parts:${i % 20}`, window: minute, limit: 1_000_000_000, ttlSeconds: 120 }))
    }
  }
  const secret = app.macgate.secret
  const grantId = grantIdOf(secret, accessToken)!
  const hash = hashSecret(accessToken)
  const record = await store.getAccessToken(hash, grantId)
  if (record === undefined) throw new Error('the parts fixture\'s token is not in the store')
  const cold = new TokenCache(store, secret, { max: 0, maxAgeMs: 1, negativeTtlMs: 1 })
  const rung = 'L9 a token LRU miss'
  return [
    ...batches,
    { rung: 'L7 Redis nonces', name: 'ioredis PING alone, 1 a turn (a round trip)', floor: true, call: () => {}, pass: async (calls) => { for (let i = 0; i < calls; i++) await redis.ping() } },
    { rung: 'L7 Redis nonces', name: 'a bare socket PING, 1 a turn (a round trip, no client library)', floor: true, call: () => {}, pass: async (calls) => { for (let i = 0; i < calls; i++) await bare.ping() } },
    { rung: 'L7 Redis nonces', name: 'ioredis EVALSHA of a 5-nonce batch alone, 1 a turn (per request)', floor: true, call: () => {}, pass: async (calls) => { for (let i = 0; i < calls; i += 5) await redis.call(batchCall.name, batchCall.args) } },
    quota,
    { rung, name: 'the miss (no LRU: store read, checks, opening)', call: () => {}, pass: async (calls) => { await inTurns(calls, 5, async () => await cold.lookup(accessToken)) } },
    { rung, name: 'the token read alone (store, 5 a turn)', call: () => {}, pass: async (calls) => { await inTurns(calls, 5, async () => await store.getAccessToken(hash, grantId)) } },
    { rung, name: 'ioredis GET alone (5 a turn)', floor: true, call: () => {}, pass: async (calls) => { await inTurns(calls, 5, async () => await redis.get('parts:absent')) } },
    // The store sends a turn's token reads as one MGET (store/redis/token-reads.ts): that call alone, per key.
    { rung, name: 'ioredis MGET of 5 keys alone (per key)', floor: true, call: () => {}, pass: async (calls) => { for (let i = 0; i < calls; i += 5) await redis.mget(TURN_KEYS) } },
    { rung, name: 'the token\'s tag check (grantIdOf)', call: () => grantIdOf(secret, accessToken) },
    { rung, name: 'the token\'s hash (hashSecret)', call: () => hashSecret(accessToken) },
    { rung, name: 'the mac_key opening (key derivation, AES-GCM)', call: () => openMacKey(accessToken, record.macKeySealed, hash) },
    { rung, name: 'the signing key (its HMAC pads)', call: () => signingKeyOf(macKey) }
  ]
}

export async function runParts (): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), 'macgate-parts-'))
  const redisServer = await startRedis()
  const redis = new Redis(redisServer.url)
  const bare = await bareRoundTrips(redisServer.url)
  const stops: Array<() => Promise<unknown> | unknown> = [async () => await rm(directory, { recursive: true, force: true }), () => { redisServer.stop() }, () => { redis.disconnect() }, () => { bare.close() }]
  try {
    const memory = new MemoryStore()
    const embedded = await fixture(memory, CALLS)
    stops.push(async () => await embedded.app.close())
    const resign = (): Fixture['signed'] => signedRequests(embedded.accessToken, embedded.macKey, CALLS)
    const store = await new RedisStore(redisServer.url, { prefix: 'parts:' }).connect()
    // The gateway does not close the store it was given: its connections would keep the process up.
    stops.push(async () => { await store.close() })
    const onRedis = await fixture(store, 1)
    stops.push(async () => await onRedis.app.close())
    const upstream = await startServer('upstream', 1)
    stops.push(async () => { await upstream.stop() })
    const parts = [...routeParts(), ...macCheckParts(embedded, resign), ...headerParts(embedded, `http://127.0.0.1:${upstream.ready.port}`), ...metricsParts(), ...accessLogParts(directory), ...await redisParts(store, redis, onRedis, bare)]
    const counters = new RequestCounters()
    const results: PartResult[] = []
    for (const part of parts) {
      results.push(await timePart(part, counters))
      process.stderr.write(`timed ${part.name}\n`)
    }
    // A quick run's file is quick-parts-… (untracked, as a quick ladder's): too few calls to quote.
    const file = new URL(`${quick ? 'quick-' : ''}parts-${new Date().toISOString().replaceAll(':', '-')}.json`, resultsDirectory)
    await writeFile(file, JSON.stringify({ date: new Date().toISOString(), node: process.version, quick, calls: CALLS, passes: PASSES, parts: results }, null, 2))
    process.stdout.write(`${partsTable(results)}\n\n${PASSES} passes of ${CALLS} calls; Node ${process.version}\nresults: ${file.pathname}\n`)
  } finally {
    for (const stop of stops.reverse()) await stop()
  }
}

/** The table: each rung's parts, each with its floors (the call alone, outside macgate) below it. */
export function partsTable (results: PartResult[]): string {
  const lines = ['| rung | part | least CPU µs/call | median | heap bytes/call |', '|:--|:--|--:|--:|--:|']
  for (const result of results) {
    const name = result.floor ? `↳ floor: ${result.name}` : result.name
    lines.push(`| ${result.rung} | ${name} | ${result.leastCpuMicros.toFixed(2)} | ${result.medianCpuMicros.toFixed(2)} | ${Math.round(result.heapBytes).toLocaleString('en')} |`)
  }
  return lines.join('\n')
}
