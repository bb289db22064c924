// What a person finds at the gateway's address: a landing page at `/`, and the icon at
// /favicon.svg and /favicon.ico. A configured route that covers one of these paths owns it: the
// user's upstream wins, and the path is proxied like any other.
import type { FastifyInstance } from 'fastify'
import { escapeHtml, FAVICON_SVG, layout, securityHeaders, sendPage } from '../../plugin/index.ts'
import type { RouteRule } from '../config/gateway-config.ts'

/** Whether a configured route covers `path`, by the route table's rule: exact, or a `/*` prefix. */
function proxied (rules: RouteRule[], path: string): boolean {
  return rules.some((rule) => rule.path === path || (rule.path.endsWith('/*') && path.startsWith(rule.path.slice(0, -1))))
}

// Pages worth a link, found as they are registered: the server metadata, account pages if any.
const LINKED = /^\/(\.well-known|account)(\/[^:*]*)?$/
const LABELS: Record<string, string> = {
  '/.well-known/oauth-authorization-server': 'Authorization server metadata (RFC 8414)',
  '/account/apps': 'Apps you have authorized'
}

function landingPage (demo: boolean, links: string[]): string {
  const item = (path: string): string => `<li><a href="${escapeHtml(path)}">${escapeHtml(LABELS[path] ?? path)}</a></li>`
  const account = links.filter((path) => path.startsWith('/account'))
  const standard = links.filter((path) => !path.startsWith('/account'))
  return layout('macgate', `<h1>macgate</h1>
<p class="lead">An OAuth 2.0 authorization server, and a gateway that lets through only API requests signed with MAC tokens.</p>
${demo ? '<div class="actions"><a class="button" id="demo" href="/demo">Try the demo</a></div>' : ''}
${account.length === 0 ? '' : `<h2>Your account</h2><ul id="account-links">${account.map(item).join('')}</ul>`}
<h2>For app developers</h2>
<p>Send people to <code>/oauth2/authorize</code>, exchange the code at <code>/oauth2/token</code>, then sign each API call
with the token's <code>mac_key</code> (<code>Authorization: MAC …</code>).</p>
${standard.length === 0 ? '' : `<ul id="standard-links">${standard.map(item).join('')}</ul>`}`)
}

const ICONS = ['/favicon.svg', '/favicon.ico']

/** The landing page's paths no configured route covers: the page and icons are served there. */
export function landingPathsLeft (routes: RouteRule[]): string[] {
  return ['/', ...ICONS].filter((path) => !proxied(routes, path))
}

/**
 * Before the plugin is registered, so that the account pages and standard endpoints it adds can be
 * linked. `demo`: whether the demo client is configured (its page is linked only then).
 */
export function registerLanding (app: FastifyInstance, { routes, demo }: { routes: RouteRule[], demo: boolean }): void {
  const links: string[] = []
  app.addHook('onRoute', ({ method, url }) => {
    if ((method === 'GET' || (Array.isArray(method) && method.includes('GET'))) && LINKED.test(url) && !links.includes(url)) links.push(url)
  })
  const left = landingPathsLeft(routes)
  if (left.includes('/')) {
    app.get('/', { onSend: securityHeaders }, async (_request, reply) => await sendPage(reply, landingPage(demo, links)))
  }
  for (const path of ICONS) {
    if (!left.includes(path)) continue
    // The SVG at both: browsers take an icon by its type, not by its name.
    app.get(path, async (_request, reply) => await reply
      .type('image/svg+xml')
      .header('cache-control', 'public, max-age=86400')
      .header('x-content-type-options', 'nosniff')
      .send(FAVICON_SVG))
  }
}
