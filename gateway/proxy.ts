import fastifyHttpProxy from '@fastify/http-proxy'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import { errors, sendOpenApiError, type MacAuthHook } from '../plugin/index.js'
import type { RouteRule } from './config.js'

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

/** The caller's identity goes upstream; its token, and any identity it claimed itself, do not. */
function rewriteRequestHeaders (request: { macIdentity: FastifyRequest['macIdentity'] }, headers: IncomingHttpHeaders): IncomingHttpHeaders {
  delete headers.authorization
  for (const name of Object.keys(headers)) if (name.startsWith('x-macgate-')) delete headers[name]
  const identity = request.macIdentity!
  headers['x-macgate-open-id'] = identity.openId
  headers['x-macgate-client-id'] = identity.clientId
  headers['x-macgate-user-id'] = identity.userId
  headers['x-macgate-scope'] = identity.scope.join(' ')
  return headers
}

/**
 * The query sent upstream: as the caller sent it, less any `token` parameter (SDKs may put the
 * access token there too). The other pairs keep their exact encoding.
 */
function withoutToken (search: string | undefined, requestUrl: string): string {
  const start = requestUrl.indexOf('?')
  const query = search !== undefined && search !== '' ? search.replace(/^\?/, '') : start === -1 ? '' : requestUrl.slice(start + 1)
  if (!query.includes('token')) return query
  return query.split('&').filter((pair) => {
    const name = pair.split('=', 1)[0]!.replaceAll('+', ' ')
    try {
      return decodeURIComponent(name) !== 'token'
    } catch {
      return true
    }
  }).join('&')
}

/** Proxies the configured routes to `upstream`, each behind a MAC check with its scopes. */
export async function registerProxy (app: FastifyInstance, upstream: string, rules: RouteRule[]): Promise<void> {
  const table = new RouteTable(rules, (rule) => app.macAuth({ scopes: rule.scopes, match: rule.match }))
  await app.register(async function proxy (context) {
    context.addHook('onRequest', async function routeCheck (request: FastifyRequest, reply: FastifyReply) {
      const end = request.url.indexOf('?')
      const route = table.match(end === -1 ? request.url : request.url.slice(0, end))
      if (route === undefined) return await sendOpenApiError(reply, errors.noSuchApi())
      if (!route.rule.methods.includes(request.method)) {
        reply.header('allow', route.rule.methods.join(', '))
        return await sendOpenApiError(reply, errors.methodNotAllowed(`use ${route.rule.methods.join(' or ')}`))
      }
      return await route.check(request, reply)
    })
    await context.register(fastifyHttpProxy, {
      upstream,
      // Every method reaches routeCheck, so an unconfigured one gets the open API's 405 or 404.
      httpMethods: ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS'],
      replyOptions: { rewriteRequestHeaders, queryString: withoutToken },
      undici: UPSTREAM_POOL
    })
  })
}
