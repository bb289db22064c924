import fastifyHttpProxy from '@fastify/http-proxy'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { errors, sendOpenApiError, type MacAuthHook } from '../plugin/index.js'
import type { RouteRule } from './config.js'
import { sendFailure } from './error-answers.js'
import { upstreamHeaders, upstreamQuery, type UpstreamHeaderOptions } from './upstream-request.js'
import { pathOf } from './request-path.js'
import { routeQuota } from './route-quota.js'
import { openApiCors } from './cors.js'

/** Keep-alive connections to the upstream, shared by every route (the bench's baseline uses the same). */
export const UPSTREAM_POOL = { connections: 128, pipelining: 1, keepAliveTimeout: 60_000 }

interface Route {
  rule: RouteRule
  check: MacAuthHook
}

/** Which configured route a path falls under: an exact path, else the longest `/*` prefix. */
class RouteTable {
  readonly #exact = new Map<string, Route>()
  readonly #prefixes: Array<[string, Route]> = []

  constructor (rules: RouteRule[], checkFor: (rule: RouteRule) => MacAuthHook) {
    for (const rule of rules) {
      const route = { rule, check: checkFor(rule) }
      if (rule.path.endsWith('/*')) this.#prefixes.push([rule.path.slice(0, -1), route])
      else this.#exact.set(rule.path, route)
    }
    this.#prefixes.sort(([a], [b]) => b.length - a.length)
  }

  match (path: string): Route | undefined {
    return this.#exact.get(path) ?? this.#prefixes.find(([prefix]) => path.startsWith(prefix))?.[1]
  }
}

/** A `..` segment, however encoded: the upstream would resolve it to a path the route check never judged. */
function climbs (path: string): boolean {
  if (!path.includes('.') && !path.includes('%')) return false
  let decoded = path
  try {
    decoded = decodeURIComponent(path)
  } catch {}
  return decoded === '..' || decoded.includes('/..') || decoded.includes('../')
}

/** A method no route of the app has: the open API's 405 on a configured path, else its 404. */
function notFoundFor (table: RouteTable) {
  return async function notFound (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const path = pathOf(request.url)
    const allowed = path === '/oauth2/token' ? ['GET', 'POST'] : path.startsWith('/oauth2/') ? undefined : table.match(path)?.rule.methods
    if (allowed === undefined) return await sendFailure(request, reply, errors.noSuchApi())
    reply.header('allow', allowed.join(', '))
    return await sendFailure(request, reply, errors.methodNotAllowed(`use ${allowed.join(' or ')}`))
  }
}

/** Proxies the configured routes to `upstream`, each behind a MAC check with its scopes. */
export async function registerProxy (app: FastifyInstance, upstream: string, rules: RouteRule[], headerOptions: UpstreamHeaderOptions, logging: boolean): Promise<void> {
  const table = new RouteTable(rules, (rule) => app.macAuth({ scopes: rule.scopes, match: rule.match, quota: routeQuota(rule) }))
  // Every method reaches routeCheck (the proxy's wildcard route) or, if no route has it, this.
  const notFound = notFoundFor(table)
  app.setNotFoundHandler(notFound)
  const cors = openApiCors(app.macgate.cors, app.clientOrigins, headerOptions)
  await app.register(async function proxy (context) {
    if (cors !== undefined) context.addHook('onSend', cors.answer)
    // One logger for every proxied request, quiet below warn: the proxy client's two info lines per
    // request stay out (access-log.ts writes the one that matters), and no child logger is made per
    // request (a per-route level would rebuild one's methods on every request).
    // Without a logger, Fastify makes no child at all: leave its fast path alone.
    if (logging) {
      const quiet = context.log.child({}, { level: 'warn' })
      context.setChildLoggerFactory(() => quiet)
    }
    // Callback style, so that Fastify runs it without a promise of its own: every request passes here.
    context.addHook('onRequest', function routeCheck (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) {
      // A browser's request (Origin) to a route: its origin looked up, a preflight answered, then back here (cors.ts).
      if (cors !== undefined && request.headers.origin !== undefined &&
        cors.defer(request, reply, table.match(pathOf(request.url))?.rule.methods, () => { routeCheck.call(this, request, reply, done) }, done)) return
      const path = pathOf(request.url)
      const route = table.match(path)
      let refusal: Promise<unknown> | undefined
      if (route === undefined || !route.rule.methods.includes(request.method)) refusal = notFound(request, reply)
      // Refused before the check, so that the caller's nonce stays unspent for a plain retry.
      else if (request.headers.upgrade !== undefined) refusal = sendOpenApiError(reply, errors.invalidRequest('protocol upgrades are not proxied'))
      else if (climbs(path)) refusal = sendOpenApiError(reply, errors.invalidRequest('the path has a .. segment'))
      if (refusal !== undefined) {
        refusal.catch(done)
        return
      }
      request.openApiRoute = route!.rule.path
      // The check answers a refusal itself; the chain goes on (done) only for a verified request.
      route!.check(request, reply, done)
    })
    await context.register(fastifyHttpProxy, {
      upstream,
      // `/*` matches `/` too; no route of its own for `/`, which the landing page (landing.ts) takes
      // unless a configured route covers it.
      routes: ['/*'],
      // Every method reaches routeCheck, so an unconfigured one gets the open API's 405 or 404.
      httpMethods: ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS'],
      replyOptions: {
        rewriteRequestHeaders: (request, headers) => upstreamHeaders(request.macIdentity!, request.ip, headers, headerOptions),
        queryString: upstreamQuery
      },
      undici: UPSTREAM_POOL
    })
  })
}
