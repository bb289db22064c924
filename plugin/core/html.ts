// The one HTML layout of every page macgate serves (sign-in, consent, errors, the demo). No scripts:
// plain forms with stable field names, so that scripts and browsers can drive them alike.
import type { OAuthError } from './errors.js'

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

export function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (character) => ENTITIES[character] ?? character)
}

const STYLE = `body{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0;display:flex;justify-content:center;line-height:1.5}
main{background:#fff;margin:4rem 1rem;padding:2rem;border-radius:8px;max-width:24rem;width:100%;box-shadow:0 1px 4px #0002}
main.wide{max-width:52rem;margin:2rem 1rem}
label{display:block;margin:.75rem 0 .25rem}input{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem}
button{margin:1rem .5rem 0 0;padding:.5rem 1rem;font-size:1rem;cursor:pointer}.error{color:#b00020}
ul{padding-left:1.2rem}.link{background:none;border:none;color:#0645ad;padding:0;text-decoration:underline}
pre{background:#f4f5f7;padding:.75rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.step{border-left:4px solid #3b6ede;padding-left:1rem;margin:1.5rem 0}
a.button{display:inline-block;background:#3b6ede;color:#fff;padding:.6rem 1.2rem;border-radius:6px;text-decoration:none}`

/** A whole page around `body` (already escaped HTML). `wide` for pages that show data, like the demo. */
export function layout (title: string, body: string, { wide = false } = {}): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main${wide ? ' class="wide"' : ''}>${body}</main></body></html>`
}

/** The page for any failure shown to a person: the code, its text, and whose move it is. */
export function errorPage (error: OAuthError): string {
  return layout('Authorization error', `<h1>Authorization error</h1>
<p class="error">Error <span id="error-code">${error.errno}</span>: <span id="error-description">${escapeHtml(error.message)}</span></p>
<p>${escapeHtml(error.advice)}</p>`)
}
