import { readFile } from 'node:fs/promises'

/**
 * The browser entry of macgate/client and every module it imports (test/gateway/site/client-bundle.test.ts keeps
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

/** A stripped module's relative imports of `./x.ts` as the build writes them, `./x.js`. */
function asBuilt (code: string): string {
  return code.replace(/(\bfrom\s*|\bimport\s*\(?\s*)(["'])(\.{1,2}\/[^"']+)\.ts\2/g, '$1$2$3.js$2')
}

/**
 * The modules as a page loads them, `client/browser.js` and so on, read once at start. Built, this
 * file is dist/gateway/site/demo/client-modules.js beside dist/plugin's compiled modules, which go out
 * as they are; run from source (Node's type stripping, tap), the plugin's are TypeScript, stripped
 * of their types by esbuild, the dev dependency that is installed wherever the sources run, and
 * their `.ts` imports named `.js`, as tsc's rewriteRelativeImportExtensions names them in the build.
 * `here`: where this file is (a test points it into a built layout).
 */
export async function loadBrowserClient (here: string = import.meta.url): Promise<Map<string, string>> {
  const plugin = new URL('../../../plugin/', here)
  const fromSource = here.endsWith('.ts')
  const strip = fromSource ? (await import('esbuild')).transform : undefined
  const modules = new Map<string, string>()
  for (const name of BROWSER_CLIENT_MODULES) {
    const source = await readFile(new URL(`${name}.${fromSource ? 'ts' : 'js'}`, plugin), 'utf8')
    modules.set(`${name}.js`, strip === undefined ? source : asBuilt((await strip(source, { loader: 'ts', format: 'esm', target: 'es2022' })).code))
  }
  return modules
}
