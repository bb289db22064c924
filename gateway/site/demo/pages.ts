import type { TokenResponse } from '../../../plugin/client/index.ts'
import { escapeHtml, layout as pageLayout } from '../../../plugin/index.ts'

// The demo shows data: the plugin's one layout, in its wide form.
function layout (title: string, body: string): string {
  return pageLayout(title, body, { wide: true })
}

export function demoPage (configured: boolean): string {
  return layout('macgate demo', `<h1>macgate demo client</h1>
<p class="lead">This page plays a client app. It sends you through <code>/oauth2/authorize</code>, receives the code,
exchanges it at <code>/oauth2/token</code> with its secret, then calls the open API with MAC-signed requests.</p>
${configured ? '<p><a class="button" id="start" href="/demo/start">Sign in with macgate</a></p>' : '<p>The demo client is configured only with the embedded store (<code>npm start</code> without REDIS_URL).</p>'}`)
}

export function demoErrorPage (message: string): string {
  return layout('macgate demo', `<h1>macgate demo client</h1><p id="error">${escapeHtml(message)}</p><div class="actions"><a class="button secondary" href="/demo">Start again</a></div>`)
}

/** A reload of the callback: its state and code are spent, so there is nothing to show again. */
export function alreadyCompletedPage (): string {
  return layout('macgate demo: already completed', `<h1>This sign-in was already completed</h1>
<p class="lead" id="completed">It was handled when you first arrived on this page. Its one-time code works only once,
so reloading the page cannot show the results again.</p>
<div class="actions"><a class="button" id="again" href="/demo/start">Sign in again</a><a class="button secondary" href="/demo">Demo page</a></div>`)
}

export interface DemoCall {
  path: string
  authorization: string
  status: number
  body: string
}

export function callbackPage ({ tokenBody, tokens, calls }: { tokenBody: string, tokens: TokenResponse, calls: DemoCall[] }): string {
  // Show how secrets look without showing them whole.
  const shown = tokenBody.replace(/("(?:access_token|refresh_token|mac_key)":")([^"]{6})[^"]*/g, '$1$2…')
  const results = calls.map((call) => `<div class="step"><h3>GET ${escapeHtml(call.path)} → ${call.status}</h3>
<pre>Authorization: ${escapeHtml(call.authorization.replace(/mac="[^"]*"/, 'mac="…"').replace(/access_token="([^"]{6})[^"]*"/, 'access_token="$1…"'))}</pre>
<pre class="api-result">${escapeHtml(call.body)}</pre></div>`).join('')
  return layout('macgate demo: signed in', `<h1>Signed in through macgate</h1>
<div class="step"><h3>1. Token endpoint answer (secrets shortened)</h3><pre id="token-body">${escapeHtml(shown)}</pre>
<p>openId <code id="open-id">${escapeHtml(tokens.openId ?? '')}</code>, scope <code id="scope">${escapeHtml(tokens.scope)}</code></p></div>
<h2>2. Signed open API calls</h2>${results}<div class="actions"><a class="button secondary" id="again" href="/demo">Start again</a></div>
<p class="aside">The demo app now appears among <a id="your-apps" href="/oauth2/account/apps">your authorized apps</a>, where you can remove its access: its token is then refused everywhere.</p>`)
}
