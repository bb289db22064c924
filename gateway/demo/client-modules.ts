import { readFile } from 'node:fs/promises'

/**
 * The browser entry of macgate/client and every module it imports (test/client-bundle.test.ts keeps
 * this list equal to what a bundler reaches from it), relative to plugin/.
 */
export const BROWSER_CLIENT_MODULES = [
  'client/browser',
  'client/authorization',
  'client/base64',
  'client/request-signature',
  'client/token-response',
  'client/web-sign',
  'mac/string-to-sign'
] as const

const PLUGIN = new URL('../../plugin/', import.meta.url)
// Built, this file is dist/gateway/demo/client-modules.js beside dist/plugin's compiled modules;
// run from source (tsx, tap), the plugin's are TypeScript.
const FROM_SOURCE = import.meta.url.endsWith('.ts')

/**
 * The modules as a page loads them, `client/browser.js` and so on, read once at start. The compiled
 * files go out as they are; TypeScript sources are stripped of their types by esbuild, the dev
 * dependency that is installed wherever the sources run.
 */
export async function loadBrowserClient (): Promise<Map<string, string>> {
  const strip = FROM_SOURCE ? (await import('esbuild')).transform : undefined
  const modules = new Map<string, string>()
  for (const name of BROWSER_CLIENT_MODULES) {
    const source = await readFile(new URL(`${name}.${FROM_SOURCE ? 'ts' : 'js'}`, PLUGIN), 'utf8')
    modules.set(`${name}.js`, strip === undefined ? source : (await strip(source, { loader: 'ts', format: 'esm', target: 'es2022' })).code)
  }
  return modules
}
