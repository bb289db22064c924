import Fastify, { type FastifyInstance } from 'fastify'
import { SECURITY_HEADERS } from '../../../plugin/index.ts'
import { appPage, appPolicy, type DemoAppConfig } from './app-page.ts'
import { APP_SCRIPT } from './app-script.ts'
import { loadBrowserClient } from './client-modules.ts'

export type { DemoAppConfig } from './app-page.ts'

export interface DemoApp {
  /** `http://host:port`, the origin its clients register. */
  origin: string
  /** The page answers 503 until the gateway and its clients are known. */
  configure: (config: DemoAppConfig) => void
  close: () => Promise<void>
}

/**
 * The demo single-page app on a port of its own (another origin than the gateway's): its page, its
 * script and macgate/client's browser modules, nothing else. It listens first, so that its origin
 * is known when its clients are registered, and is configured then.
 */
export async function startDemoApp (host: string, port = 0): Promise<DemoApp> {
  const modules = await loadBrowserClient()
  let page: { html: string, policy: string } | undefined
  const app: FastifyInstance = Fastify({ logger: false, requestIdHeader: false })
  // The page sets a CSP of its own (appPolicy); every other answer gets the pages' usual one.
  app.addHook('onSend', async (_request, reply) => {
    reply.headers({ ...SECURITY_HEADERS, ...(reply.hasHeader('content-security-policy') && { 'content-security-policy': reply.getHeader('content-security-policy') }), 'x-content-type-options': 'nosniff' })
  })

  app.get('/', async (_request, reply) => {
    if (page === undefined) return await reply.code(503).type('text/plain').send('not configured yet')
    return await reply.type('text/html; charset=utf-8').header('content-security-policy', page.policy).send(page.html)
  })
  app.get('/app.js', async (_request, reply) => await reply.type('text/javascript; charset=utf-8').send(APP_SCRIPT))
  app.get('/lib/*', async (request, reply) => {
    const module = modules.get((request.params as { '*': string })['*'])
    if (module === undefined) return await reply.code(404).type('text/plain').send('no such module')
    return await reply.type('text/javascript; charset=utf-8').send(module)
  })
  // The layout's icon is a data: URI; this only keeps a browser's own lookup quiet.
  app.get('/favicon.ico', async (_request, reply) => await reply.code(204).send())

  const address = await app.listen({ host, port })
  return {
    origin: new URL(address).origin,
    configure: (config) => {
      const html = appPage(config)
      page = { html, policy: appPolicy(html, config.gateway) }
    },
    close: async () => await app.close()
  }
}
