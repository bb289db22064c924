// The audit trail of a real code flow: what a subscriber on app.macgate.events receives (types,
// fields, the grant they belong to), and the gateway's log lines for them, which carry no code,
// token, mac_key, secret or password.
import t from 'tap'
import type { AuditEvent } from '../../../plugin/index.ts'
import { addClient, addUser, authorizeUrl, callToken, InjectBrowser, REDIRECT_URI } from '../../helpers/app.ts'
import { loggedGateway } from '../../helpers/memory-log.ts'

const WRONG_PASSWORD = 'wrong-password-Zq81xv'
const PASSWORD = 'correct-password-Kp27mw'

t.test('a code flow\'s events, in order, each with its fields; the log has each, and no secret', async (t) => {
  const started = Date.now()
  const { app, log } = await loggedGateway(t)
  const events: AuditEvent[] = []
  const issuedOnly: AuditEvent[] = []
  app.macgate.events.on('audit', (event) => { events.push(event) })
  app.macgate.events.on('grant.issued', (event) => { issuedOnly.push(event) })

  const { store } = app.macgate
  const { clientId, clientSecret } = await addClient(store, { scope: '1 3' })
  const user = await addUser(store, `audit${Date.now()}`, PASSWORD)
  const secrets: string[] = [clientSecret, PASSWORD, WRONG_PASSWORD]
  const url = authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: '1 3' })
  const common = { client_id: clientId, client_secret: clientSecret, redirect_uri: REDIRECT_URI }
  const browser = new InjectBrowser(app)

  t.equal((await browser.signIn(user.username, WRONG_PASSWORD)).statusCode, 401, 'a wrong password')
  t.equal((await browser.signIn(user.username, PASSWORD)).statusCode, 200, 'signed in')

  /** Allows on the consent page, exchanges the code; resolves to the code and its token set. */
  async function grant (): Promise<{ code: string, body: Record<string, string> }> {
    const allowed = await browser.decide(url, 'allow')
    t.equal(allowed.statusCode, 303)
    const code = new URL(allowed.headers.location as string).searchParams.get('code')!
    const answer = await callToken(app, { ...common, grant_type: 'authorization_code', code })
    t.equal(answer.status, 200, 'code exchanged')
    const body = answer.body as Record<string, string>
    secrets.push(code, body.access_token!, body.refresh_token!, body.mac_key!)
    return { code, body }
  }

  // Grant 1: exchanged, refreshed, then its spent refresh token comes back.
  const first = await grant()
  const refreshed = await callToken(app, { ...common, grant_type: 'refresh_token', refresh_token: first.body.refresh_token! })
  t.equal(refreshed.status, 200, 'refreshed')
  const rotated = refreshed.body as Record<string, string>
  secrets.push(rotated.access_token!, rotated.refresh_token!, rotated.mac_key!)
  t.equal((await callToken(app, { ...common, grant_type: 'refresh_token', refresh_token: first.body.refresh_token! })).status, 400, 'a spent refresh token')

  // Grant 2: its code replayed.
  const second = await grant()
  t.equal((await callToken(app, { ...common, grant_type: 'authorization_code', code: second.code })).status, 400, 'a spent code')

  // Grant 3: revoked by the client (RFC 7009).
  const third = await grant()
  const revoked = await app.inject({
    method: 'POST',
    url: '/oauth2/revoke',
    payload: new URLSearchParams({ token: third.body.refresh_token!, ...common }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' }
  })
  t.equal(revoked.statusCode, 200, 'revoked')

  t.equal((await browser.decide(url, 'deny')).statusCode, 303, 'denied')

  t.strictSame(events.map((event) => event.type), [
    'signin.failed',
    'consent.given', 'grant.issued', 'code.exchanged', 'refresh.rotated', 'reuse.detected',
    'consent.given', 'grant.issued', 'code.exchanged', 'reuse.detected',
    'consent.given', 'grant.issued', 'code.exchanged', 'grant.revoked',
    'consent.denied'
  ], 'every event, in order')

  const now = Date.now()
  for (const event of events) t.ok(Number.isInteger(event.at) && event.at >= started && event.at <= now, `${event.type}: at is ms since the epoch, now`)
  const fields = (event: AuditEvent): Record<string, unknown> => {
    const { at: _at, ...rest } = event
    return rest
  }
  const grantIds = events.filter((event) => event.type === 'grant.issued').map((event) => (event as { grantId: string }).grantId)
  t.equal(new Set(grantIds).size, 3, 'three grants, three grant ids')
  for (const id of grantIds) t.match(id, /^[\w-]{8,}$/, 'a grant id is an opaque string')
  const [g1, g2, g3] = grantIds as [string, string, string]
  const scope = ['1', '3']
  const { userId } = user
  t.strictSame(events.map(fields), [
    { type: 'signin.failed', username: user.username, ip: '127.0.0.1', reason: 'bad credentials' },
    { type: 'consent.given', clientId, userId, scope },
    { type: 'grant.issued', grantId: g1, clientId, userId, scope, responseType: 'code' },
    { type: 'code.exchanged', grantId: g1, clientId, userId },
    { type: 'refresh.rotated', grantId: g1, clientId, userId },
    { type: 'reuse.detected', grantId: g1, clientId, what: 'refresh token' },
    { type: 'consent.given', clientId, userId, scope },
    { type: 'grant.issued', grantId: g2, clientId, userId, scope, responseType: 'code' },
    { type: 'code.exchanged', grantId: g2, clientId, userId },
    { type: 'reuse.detected', grantId: g2, clientId, what: 'code' },
    { type: 'consent.given', clientId, userId, scope },
    { type: 'grant.issued', grantId: g3, clientId, userId, scope, responseType: 'code' },
    { type: 'code.exchanged', grantId: g3, clientId, userId },
    { type: 'grant.revoked', grantId: g3, clientId, by: 'client' },
    { type: 'consent.denied', clientId, userId }
  ], 'each event\'s fields, exactly')
  t.strictSame(issuedOnly, events.filter((event) => event.type === 'grant.issued'), 'a subscriber to one type gets that type only, the same objects')

  // The log: one line per event, `audit` holding it, msg its type.
  const audit = log.lines.filter((line) => line.audit !== undefined)
  t.strictSame(audit.map((line) => [line.msg, (line.audit as { type: string }).type, line.level]), events.map((event) => [event.type, event.type, 30]), 'a line per event, at info')
  t.strictSame(audit.map((line) => line.audit), JSON.parse(JSON.stringify(events)), 'each line holds the event as it was')

  // Nothing secret anywhere: not in the events, not in any log line (access lines included).
  t.equal(secrets.filter((secret) => secret === undefined || secret.length < 8).length, 0, 'every secret collected')
  const text = JSON.stringify(log.lines)
  const eventsText = JSON.stringify(events)
  for (const secret of secrets) {
    t.notOk(text.includes(secret) || text.includes(encodeURIComponent(secret)), `the log holds no ${secret.slice(0, 4)}…`)
    t.notOk(eventsText.includes(secret), `no event holds ${secret.slice(0, 4)}…`)
  }
})

t.test('a subscriber that throws: the request still succeeds and the audit log line is still written', async (t) => {
  const { app, log } = await loggedGateway(t)
  const warnings: string[] = []
  const onWarning = (warning: Error): void => { warnings.push(warning.message) }
  process.on('warning', onWarning)
  t.teardown(() => { process.off('warning', onWarning) })
  app.macgate.events.on('signin.failed', () => { throw new Error('subscriber broke') })
  const user = await addUser(app.macgate.store)
  const response = await new InjectBrowser(app).signIn(user.username, WRONG_PASSWORD)
  t.equal(response.statusCode, 401, 'the sign-in page answers as ever')
  await new Promise((resolve) => setImmediate(resolve))
  t.ok(warnings.some((message) => message.includes('subscriber broke')), 'a process warning names the failure')
  t.equal(log.lines.filter((line) => (line.audit as { type?: string } | undefined)?.type === 'signin.failed').length, 1, 'the audit line for the event is still written')
})
