// Chromium for the browser tests: found on the PATH, launched headless once per file; and the
// layout facts a screenshot check asserts, read in the page itself.
import { accessSync, constants } from 'node:fs'
import { createServer } from 'node:http'
import { delimiter, join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import tap, { type Test } from 'tap'
import { listenOnLoopback } from './listen.ts'

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']

/** The first Chromium on the PATH (CHROMIUM_PATH first, when set), or undefined. */
export function findChromium (env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = [
    ...(env.CHROMIUM_PATH !== undefined && env.CHROMIUM_PATH !== '' ? [env.CHROMIUM_PATH] : []),
    ...(env.PATH ?? '').split(delimiter).filter((dir) => dir !== '').flatMap((dir) => NAMES.map((name) => join(dir, name)))
  ]
  return candidates.find((file) => {
    try {
      accessSync(file, constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}

export const CHROMIUM = findChromium()

/**
 * The `skip` option of a browser test: a reason when Chromium is missing locally. On CI a missing
 * Chromium is no reason to skip: the test then runs and fails loudly (see `launch`).
 */
export const skipWithoutChromium: false | string = CHROMIUM !== undefined || process.env.CI !== undefined
  ? false
  : `no Chromium on the PATH (looked for ${NAMES.join(', ')}; or set CHROMIUM_PATH)`

let launched: Promise<Browser> | undefined

/**
 * The test file's one Chromium (a launch costs a second of CPU; `extraArgs`, the first call's, e.g.
 * a test certificate to trust), closed when the file ends. Each test
 * opens its own contexts, which share nothing (cookies, storage, cache), and they are closed when
 * that test ends, so that no page holds a connection to a gateway the test closes.
 */
export async function launch (t: Test, { extraArgs = [] }: { extraArgs?: string[] } = {}): Promise<Browser> {
  if (CHROMIUM === undefined) throw new Error(`CI is set but no Chromium is on the PATH (looked for ${NAMES.join(', ')}; or set CHROMIUM_PATH)`)
  if (launched === undefined) {
    launched = chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...extraArgs],
      timeout: 30_000
    })
    const browser = launched
    tap.teardown(async () => await (await browser).close())
  }
  const browser = await launched
  const before = new Set(browser.contexts())
  t.teardown(async () => {
    await Promise.all(browser.contexts().filter((context) => !before.has(context)).map(async (context) => await context.close()))
  })
  return browser
}

export const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 }
} as const

export type ViewportName = keyof typeof VIEWPORTS

/** What a person sees of a page at its viewport, read in the browser. */
export interface LayoutFacts {
  scrollWidth: number
  innerWidth: number
  /** The selector's element lies wholly within the first screen, and is not hidden. */
  inFirstScreen: boolean
}

export async function layoutFacts (page: Page, selector: string): Promise<LayoutFacts> {
  return await page.evaluate((selector) => {
    const element = document.querySelector(selector)
    const box = element?.getBoundingClientRect()
    const shown = element !== null && getComputedStyle(element).visibility !== 'hidden' && box !== undefined && box.width > 0 && box.height > 0
    return {
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
      inFirstScreen: shown && box.top >= 0 && box.left >= 0 && box.bottom <= window.innerHeight && box.right <= window.innerWidth
    }
  }, selector)
}

/**
 * At each viewport: no horizontal scrolling, `primary` visible without scrolling, and a full-page
 * screenshot at `<dir>/<name>-<viewport>.png`. Returns the screenshots' paths.
 */
export async function checkLayout (t: Test, page: Page, { name, dir, primary }: { name: string, dir: string, primary: string }): Promise<string[]> {
  const shots: string[] = []
  for (const [viewport, size] of Object.entries(VIEWPORTS) as Array<[ViewportName, { width: number, height: number }]>) {
    await page.setViewportSize(size)
    const facts = await layoutFacts(page, primary)
    t.ok(facts.scrollWidth <= facts.innerWidth, `${name} at ${viewport}: no horizontal overflow (${facts.scrollWidth} <= ${facts.innerWidth})`)
    t.ok(facts.inFirstScreen, `${name} at ${viewport}: ${primary} is visible without scrolling`)
    const path = join(dir, `${name}-${viewport}.png`)
    await page.screenshot({ path, fullPage: true })
    shots.push(path)
  }
  await page.setViewportSize(VIEWPORTS.desktop)
  return shots
}

/** The computed background colors of two elements, to tell a primary button from a secondary one. */
export async function backgrounds (page: Page, ...selectors: string[]): Promise<string[]> {
  return await Promise.all(selectors.map(async (selector) => await page.locator(selector).evaluate((element) => getComputedStyle(element).backgroundColor)))
}

/**
 * Fills the sign-in form on `tab` and submits it; resolves once the tab is at a URL that `arrives`
 * matches (by default: any page but the sign-in form).
 */
export async function signIn (tab: Page, username: string, password: string, arrives: RegExp | ((url: URL) => boolean) = (url) => !url.pathname.startsWith('/oauth2/signin')): Promise<void> {
  await tab.fill('input[name=username]', username)
  await tab.fill('input[name=password]', password)
  await Promise.all([tab.waitForURL(arrives), tab.click('button[type=submit]')])
}

/**
 * The client app's callback for a browser's code flow: a page of its own (`#callback`), on loopback
 * until the test ends; the test exchanges the code itself. Resolves to its redirect URI.
 */
export async function callbackPage (t: Test): Promise<string> {
  const callback = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>Callback</title><h1 id="callback">back at the app</h1>'))
  return `${await listenOnLoopback(t, callback)}/callback`
}
