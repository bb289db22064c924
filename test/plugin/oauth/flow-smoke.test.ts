import t from 'tap'
import { addClient, buildTestApp, callToken, obtainCode, REDIRECT_URI } from '../../helpers/app.ts'

for (const store of ['memory', 'redis'] as const) {
  t.test(`code grant end to end on the ${store} store`, async (t) => {
    const { app } = await buildTestApp(t, { store })
    const { clientId, clientSecret } = await addClient(app.macgate.store)
    const { code, location } = await obtainCode(app, clientId, { state: 'xyz' })
    t.equal(location.searchParams.get('state'), 'xyz')
    const answer = await callToken(app, { client_id: clientId, client_secret: clientSecret, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', code })
    t.equal(answer.status, 200)
    t.equal(answer.body.token_type, 'mac')
  })
}
