// A user's authorization through the pages, as a browser makes it, and the code exchanged.
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { authorizeUrl, callToken, REDIRECT_URI, type InjectBrowser } from './app.ts'

export interface Tokens { access_token: string, mac_key: string, refresh_token: string }

/** The signed-in `browser` allows `client` for `scope`, and the code is exchanged for tokens. */
export async function grantTokens (t: Test, app: FastifyInstance, browser: InjectBrowser, client: { clientId: string, clientSecret: string }, scope = '1'): Promise<Tokens> {
  const allowed = await browser.decide(authorizeUrl({ client_id: client.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope }), 'allow')
  t.equal(allowed.statusCode, 303, 'allowed')
  const code = new URL(String(allowed.headers.location)).searchParams.get('code')!
  const answer = await callToken(app, { client_id: client.clientId, client_secret: client.clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code })
  t.equal(answer.status, 200, 'exchanged')
  return answer.body as unknown as Tokens
}
