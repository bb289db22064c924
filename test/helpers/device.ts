import type { FastifyInstance } from 'fastify'
import { registerClient } from '../../plugin/operator/clients.ts'
import { DEVICE_CODE_GRANT } from '../../plugin/access/grant-types.ts'
import { ScopeRegistry } from '../../plugin/access/scope.ts'
import type { Store } from '../../plugin/store/store.ts'
import { InjectBrowser } from './app.ts'

/** RFC 8628's grant type. */
export const DEVICE_GRANT = DEVICE_CODE_GRANT

/** A client registered for the device grant: public (a TV app) unless told, with its secret when confidential. */
export async function addDeviceClient (store: Store, { public: isPublic = true, name = 'Living Room TV', scope = '1 3 4 6' } = {}) {
  const { client, clientSecret } = await registerClient(store, new ScopeRegistry(), {
    name, redirectUris: ['https://tv.example/unused'], scope, public: isPublic, grantTypes: [DEVICE_GRANT]
  })
  return { client, clientId: client.id, clientSecret }
}

export interface DeviceAnswer {
  device_code: string
  user_code: string
  verification_uri: string
  verification_uri_complete: string
  expires_in: number
  interval: number
}

/** POST /oauth2/device_authorization by inject; the status and the parsed body. */
export async function startDevice (app: FastifyInstance, form: Record<string, string>) {
  const response = await app.inject({ method: 'POST', url: '/oauth2/device_authorization', payload: new URLSearchParams(form).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  const json = String(response.headers['content-type']).startsWith('application/json')
  return { status: response.statusCode, body: json ? response.json() : response.body, headers: response.headers }
}

/** One poll at the standard token endpoint by inject. */
export async function pollDevice (app: FastifyInstance, form: Record<string, string>) {
  const response = await app.inject({
    method: 'POST', url: '/oauth2/rfc/token', payload: new URLSearchParams({ grant_type: DEVICE_GRANT, ...form }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' }
  })
  return { status: response.statusCode, body: response.json() }
}

/** Signs in (when not yet), enters the code, and decides: the last page. */
export async function decideDevice (browser: InjectBrowser, user: { username: string, password: string }, userCode: string, decision: 'allow' | 'deny') {
  if (browser.cookie === '') await browser.signIn(user.username, user.password, '/oauth2/device')
  await browser.get('/oauth2/device')
  const confirm = await browser.post('/oauth2/device', { user_code: userCode })
  if (confirm.statusCode !== 200) return confirm
  return await browser.post('/oauth2/device', { user_code: userCode, decision })
}
