import { createHash } from 'node:crypto'
import { escapeHtml, layout } from '../../plugin/index.js'

/** What the page's script needs: where the gateway is, and the two demo clients by grant. */
export interface DemoAppConfig {
  gateway: string
  redirectUri: string
  scope: string
  clients: { code: string, token: string }
}

/** The demo app's one page: a grant switch and sign-in, then the signed calls and their answers. */
export function appPage (config: DemoAppConfig): string {
  // `<` escaped: the JSON sits in a script element, which `</script>` in a value would end.
  const json = JSON.stringify(config).replace(/</g, '\\u003c')
  return layout('macgate demo app', `<h1>An app without a server</h1>
<p class="lead">This page is a client app on its own origin, with no server of its own: it signs in at
<code>${escapeHtml(config.gateway)}</code>, keeps the MAC token in its memory and signs its own open API calls
in this browser, with <code>macgate/client</code>.</p>
<section id="signed-out">
<fieldset id="grants"><legend>Grant</legend>
<label><input type="radio" name="grant" value="code" checked> Authorization code with PKCE (a public client, RFC 9700)</label>
<label><input type="radio" name="grant" value="token"> Implicit grant (the spec's way for apps without a server)</label>
</fieldset>
<div class="actions"><button id="signin" type="button">Sign in with macgate</button></div>
</section>
<section id="signed-in" hidden>
<p>Signed in with the <strong id="grant-used"></strong>: scope <code id="scope"></code>, openId <code id="open-id"></code>, access token <code id="token"></code></p>
<div class="actions"><button id="call" type="button">Call the open API</button><button id="replay" type="button" class="secondary">Send one call twice</button>
<button id="refresh" type="button" class="secondary">Refresh the token</button><button id="revoke" type="button" class="secondary">Revoke the token</button>
<button id="signout" type="button" class="secondary">Forget the token</button></div>
</section>
<div id="results"></div>
<script type="application/json" id="config">${json}</script>
<script type="module" src="/app.js"></script>`, { wide: true })
}

/**
 * The page's CSP: scripts from this origin only, calls to the gateway only, the layout's one style
 * element by its hash. What an app without a server should send, since its tokens live in the page.
 */
export function appPolicy (html: string, gateway: string): string {
  const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1] ?? ''
  const hash = createHash('sha256').update(style).digest('base64')
  return [
    "default-src 'none'", "script-src 'self'", `style-src 'sha256-${hash}'`, 'img-src data:', `connect-src ${gateway}`,
    "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"
  ].join('; ')
}
