// The one HTML layout of every page macgate serves (sign-in, consent, errors, the demo, the landing
// page). No scripts: plain forms with stable field names, so that scripts and browsers can drive them
// alike. The stylesheet is inline: the pages' CSP (http/replies.ts) restricts only framing, and one
// style element keeps every page a single self-contained answer.
import type { OAuthError } from './errors.ts'

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

export function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (character) => ENTITIES[character] ?? character)
}

/** The mark of every page, also served by the gateway as its favicon. */
export const FAVICON_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2456c6"/>' +
  '<path d="M9 22V10l7 7 7-7v12" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/></svg>'

// A data: URI, so that a page mounted in any app shows the icon without a request (and no 404 in
// the console when the host app serves no /favicon.ico).
const ICON_LINK = `<link rel="icon" type="image/svg+xml" href="data:image/svg+xml,${encodeURIComponent(FAVICON_SVG)}">`

// Primary: the one action a page expects (filled). Secondary: the other way out (outlined).
const STYLE = `:root{--ink:#1b1f24;--muted:#59616b;--line:#d5d9df;--bg:#f2f4f7;--accent:#2456c6;--accent-dark:#1a3f94;--danger:#b00020}
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg);margin:0;padding:2.5rem 1rem}
main{background:#fff;margin:0 auto;padding:2rem;border-radius:12px;max-width:26rem;box-shadow:0 1px 3px #0002,0 8px 24px #0000000d}
main.wide{max-width:52rem}
.brand{display:flex;align-items:center;gap:.5rem;margin:0 0 1.25rem;color:var(--muted);font-weight:600;font-size:.9rem;letter-spacing:.02em}
.brand svg{width:1.5rem;height:1.5rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 .5rem}h2{font-size:1.2rem;margin:2rem 0 .5rem}h3{font-size:1rem;margin:0 0 .5rem}
p{margin:.5rem 0 1rem}.lead{color:var(--muted);margin-top:0}code{font-size:.9em;background:var(--bg);padding:.1em .3em;border-radius:4px;overflow-wrap:anywhere}
a{color:var(--accent)}.error{color:var(--danger)}.aside form{display:inline}
label{display:block;font-weight:600;margin:1rem 0 .35rem}
input,textarea,select{width:100%;padding:.6rem .75rem;font:inherit;border:1px solid var(--line);border-radius:8px}
input[type=checkbox],input[type=radio]{width:auto}label.check{font-weight:400;margin:.35rem 0}fieldset{border:1px solid var(--line);border-radius:8px;margin:1rem 0}
dl.details{display:grid;grid-template-columns:9rem 1fr;gap:.25rem .75rem;margin:.5rem 0}dl.details dt{color:var(--muted)}dl.details dd{margin:0}
input:focus,button:focus-visible,.button:focus-visible{outline:3px solid #2456c666;outline-offset:1px;border-color:var(--accent)}
button,.button{display:inline-block;font:inherit;font-weight:600;text-align:center;text-decoration:none;padding:.65rem 1.25rem;border-radius:8px;cursor:pointer;
border:1px solid var(--accent);background:var(--accent);color:#fff}
button:hover,.button:hover{background:var(--accent-dark);border-color:var(--accent-dark)}
button.secondary,.button.secondary{background:#fff;color:var(--ink);border-color:var(--line)}
button.secondary:hover,.button.secondary:hover{background:var(--bg)}
.actions{display:flex;flex-wrap:wrap;gap:.75rem;margin:1.5rem 0 0}.actions>*{flex:1 1 8rem}main.wide .actions>*{flex:0 0 auto}
a.button{display:inline-flex;align-items:center;justify-content:center}
button.link{background:none;border:none;color:var(--accent);padding:0;font-weight:400;text-decoration:underline}
.aside{margin-top:1.5rem;padding-top:1rem;border-top:1px solid var(--line);font-size:.9rem;color:var(--muted)}
ul{padding-left:1.2rem}.checks ul{list-style:none;padding:0;margin:.5rem 0;border:1px solid var(--line);border-radius:8px}
.checks li{padding:.5rem .75rem}.checks li+li{border-top:1px solid var(--line)}.checks li::before{content:"✓";color:var(--accent);font-weight:700;margin-right:.6rem}
pre{background:var(--bg);padding:.75rem;border-radius:6px;overflow-x:auto;white-space:pre-wrap;word-break:break-all;font-size:.85rem}
.step{border-left:4px solid var(--accent);padding-left:1rem;margin:1.5rem 0}
ul.apps{list-style:none;padding:0;margin:1rem 0}ul.apps>li{border:1px solid var(--line);border-radius:10px;padding:1rem;margin:0 0 1rem}
button.danger,.button.danger{color:var(--danger);border-color:var(--danger)}#notice{background:var(--bg);border-left:4px solid var(--accent);padding:.5rem .75rem}
@media (max-width:480px){body{padding:0}main{border-radius:0;box-shadow:none;min-height:100vh;padding:1.5rem 1.25rem}}`

const BRAND = `<p class="brand">${FAVICON_SVG.replace('<svg ', '<svg aria-hidden="true" ')}macgate</p>`

/** A whole page around `body` (already escaped HTML). `wide` for pages that show data, like the demo. */
export function layout (title: string, body: string, { wide = false } = {}): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title>${ICON_LINK}<style>${STYLE}</style></head><body><main${wide ? ' class="wide"' : ''}>${BRAND}${body}</main></body></html>`
}

/** The page for any failure shown to a person: the code, its text, and whose move it is. */
export function errorPage (error: OAuthError): string {
  return layout('Authorization error', `<h1>Authorization error</h1>
<p class="error">Error <span id="error-code">${error.errno}</span>: <span id="error-description">${escapeHtml(error.message)}</span></p>
<p>${escapeHtml(error.advice)}</p>`)
}
