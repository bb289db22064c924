import { createHash } from 'node:crypto'
import { escapeHtml, layout } from '../../../plugin/index.ts'

/** What the page's script needs: where the gateway is, and the two demo clients by grant. */
export interface DemoAppConfig {
  gateway: string
  redirectUri: string
  scope: string
  clients: { code: string, token: string }
}

// Beside the layout's: the grant switch as radio buttons, and the actions compact enough that the
// newest answer shows without scrolling on a phone.
const STYLE = `#grants{border:1px solid var(--line);border-radius:8px;padding:.25rem 1rem .5rem;margin:1rem 0 0}
#grants legend{font-weight:600;padding:0 .25rem}#grants label{display:flex;gap:.6rem;align-items:baseline;font-weight:400;margin:.5rem 0}
#grants input{width:auto;margin:0}#signed-in .actions{gap:.5rem;margin-top:1rem}#signed-in .actions button{padding:.45rem .9rem;font-size:.9rem}
@media (max-width:480px){#signed-in .actions button{flex:1 1 40%}}`

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
<style>${STYLE}</style>
<script type="application/json" id="config">${json}</script>
<script type="module" src="/app.js"></script>`, { wide: true })
}

/**
 * The page's CSP: scripts from this origin only, calls to the gateway only, its style elements by
 * their hashes. What an app without a server should send, since its tokens live in the page.
 */
export function appPolicy (html: string, gateway: string): string {
  const hashes = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((match) => `'sha256-${createHash('sha256').update(match[1] as string).digest('base64')}'`)
  return [
    "default-src 'none'", "script-src 'self'", `style-src ${hashes.join(' ') || "'none'"}`, 'img-src data:', `connect-src ${gateway}`,
    "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"
  ].join('; ')
}
