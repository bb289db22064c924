// `macgate login`: an operator signs in as a real user with RFC 8628's device grant (the gateway's
// own, contract §12), and gets the token answer in a file `macgate load --credentials` reads.
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import QRCode from 'qrcode'
import type { CommandIO } from './io.ts'
import { OperatorError, parseCommand, UsageError } from './usage.ts'

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

/** What `login` needs of the deployment: its RFC 8414 metadata's endpoints. */
interface Endpoints {
  deviceAuthorization: string
  token: string
}

/** How the client authenticates: a public client by its id in the form, a confidential one by Basic. */
interface ClientAuth {
  clientId: string
  secret: string | undefined
}

/** The token file: the token answer as issued, with where it came from (for `--refresh`); one JSON line. */
interface SavedToken {
  access_token: string
  mac_key: string
  refresh_token?: string
  issuer: string
  client_id: string
  [field: string]: unknown
}

/** `$XDG_CONFIG_HOME/macgate/token.json`, by default `~/.config/macgate/token.json`. */
export function defaultTokenFile (env: NodeJS.ProcessEnv): string {
  const config = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(env.HOME ?? '.', '.config')
  return join(config, 'macgate', 'token.json')
}

async function clientSecret (file: string | undefined, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (file !== undefined) {
    try {
      return (await readFile(file, 'utf8')).replace(/\r?\n$/, '')
    } catch (error) {
      throw new OperatorError(`cannot read the client secret file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
    }
  }
  const secret = env.MACGATE_CLIENT_SECRET
  return secret === undefined || secret === '' ? undefined : secret
}

/** A form POST with the client's authentication; the answer's status and JSON body. */
async function post (url: string, auth: ClientAuth, form: Record<string, string>): Promise<{ status: number, body: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }
  const fields = new URLSearchParams(form)
  if (auth.secret === undefined) fields.set('client_id', auth.clientId)
  // RFC 6749 §2.3.1: each part form-encoded before the base64.
  else headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(auth.clientId)}:${encodeURIComponent(auth.secret)}`).toString('base64')}`
  return await answerOf(url, fetch(url, { method: 'POST', headers, body: fields.toString() }))
}

async function answerOf (url: string, sent: Promise<Response>): Promise<{ status: number, body: Record<string, unknown> }> {
  let response: Response
  try {
    response = await sent
  } catch (error) {
    throw new OperatorError(`cannot reach ${url}: ${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message}`)
  }
  const text = await response.text()
  try {
    return { status: response.status, body: JSON.parse(text) as Record<string, unknown> }
  } catch {
    throw new OperatorError(`${url} answered ${response.status} without JSON`)
  }
}

/** The endpoints from the issuer's metadata; a deployment without the device grant says so. */
async function discover (issuer: string): Promise<Endpoints> {
  const url = `${issuer}/.well-known/oauth-authorization-server`
  const { status, body } = await answerOf(url, fetch(url, { headers: { accept: 'application/json' } }))
  if (status !== 200) throw new OperatorError(`${url} answered ${status}: is ${issuer} a macgate issuer?`)
  const { device_authorization_endpoint: deviceAuthorization, token_endpoint: token } = body
  if (typeof deviceAuthorization !== 'string' || typeof token !== 'string') {
    throw new OperatorError(`${issuer} does not offer the device grant (its metadata names no device_authorization_endpoint: the deployment needs "issuer" set)`)
  }
  return { deviceAuthorization, token }
}

function refusal (what: string, body: Record<string, unknown>): OperatorError {
  const description = typeof body.error_description === 'string' ? `: ${body.error_description}` : ''
  return new OperatorError(`${what} refused: ${String(body.error ?? 'no error code')}${description}`)
}

/** Writes the token answer only its owner can read: a file of its own mode from the start, then renamed over the old. */
async function save (file: string, token: SavedToken): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 })
  const temporary = `${file}.${process.pid}.tmp`
  await writeFile(temporary, `${JSON.stringify(token)}\n`, { mode: 0o600 })
  await chmod(temporary, 0o600)
  await rename(temporary, file)
}

function issued (body: Record<string, unknown>, issuer: string, clientId: string): SavedToken {
  if (typeof body.access_token !== 'string' || typeof body.mac_key !== 'string') throw new OperatorError('the token answer has no access_token or mac_key')
  return { ...body, access_token: body.access_token, mac_key: body.mac_key, issuer, client_id: clientId }
}

/**
 * RFC 8628 §3.4-3.5 from the device's side: polls every `interval` seconds, 5 s more after each
 * slow_down, until a token answer or a refusal (denied, expired, anything else). A deployment
 * briefly unavailable (503, 429) is asked again until the code's own expiry.
 */
async function pollForToken (endpoints: Endpoints, auth: ClientAuth, deviceCode: string, interval: number, expiresIn: number): Promise<Record<string, unknown>> {
  const deadline = Date.now() + expiresIn * 1000
  let wait = interval
  for (;;) {
    await sleep(wait * 1000)
    const { status, body } = await post(endpoints.token, auth, { grant_type: DEVICE_GRANT, device_code: deviceCode })
    if (status === 200) return body
    const retry = body.error === 'authorization_pending' || body.error === 'temporarily_unavailable'
    if (retry && Date.now() < deadline) continue
    if (body.error === 'slow_down') {
      wait += 5
      continue
    }
    if (body.error === 'access_denied') throw new OperatorError('the sign-in was denied in the browser')
    if (body.error === 'expired_token' || retry) throw new OperatorError('the code expired before it was approved: run macgate login again')
    throw refusal('the token endpoint', body)
  }
}

async function login (values: { issuer?: string, 'client-id'?: string, scope?: string, 'client-secret-file'?: string, out?: string }, { env, stdout }: CommandIO): Promise<void> {
  const issuer = values.issuer?.replace(/\/$/, '')
  if (issuer === undefined || !URL.canParse(issuer)) throw new UsageError('login needs --issuer URL (the deployment\'s public address)')
  const clientId = values['client-id']
  if (clientId === undefined || clientId === '') throw new UsageError('login needs --client-id ID (a client registered with --grant-types device)')
  const auth = { clientId, secret: await clientSecret(values['client-secret-file'], env) }
  const file = values.out ?? defaultTokenFile(env)

  const endpoints = await discover(issuer)
  const started = await post(endpoints.deviceAuthorization, auth, values.scope === undefined ? {} : { scope: values.scope })
  if (started.status !== 200) throw refusal('the device authorization', started.body)
  const { device_code: deviceCode, user_code: userCode, verification_uri: uri, verification_uri_complete: complete, expires_in: expiresIn, interval } = started.body as Record<string, string | number>
  stdout.write(`To sign in, open ${String(uri)}\nand enter the code ${String(userCode)}\n`)
  if (typeof complete === 'string') {
    stdout.write(`(or open ${complete})\n`)
    // A phone's camera opens it: shown only to a person at a terminal, never into a pipe or a file.
    if ((stdout as { isTTY?: boolean }).isTTY === true) stdout.write(await QRCode.toString(complete, { type: 'terminal', small: true }))
  }
  stdout.write(`Waiting for approval (the code expires in ${Math.round(Number(expiresIn) / 60)} min)...\n`)
  const body = await pollForToken(endpoints, auth, String(deviceCode), Number(interval) > 0 ? Number(interval) : 5, Number(expiresIn) > 0 ? Number(expiresIn) : 600)
  await save(file, issued(body, issuer, clientId))
  stdout.write(`Signed in (scope ${String(body.scope)}): the token is in ${file}\n`)
}

/** `--refresh`: the saved refresh token for a new token answer, at the issuer and for the client it came from. */
async function refresh (values: { 'client-secret-file'?: string, out?: string }, { env, stdout }: CommandIO): Promise<void> {
  const file = values.out ?? defaultTokenFile(env)
  let saved: SavedToken
  try {
    saved = JSON.parse(await readFile(file, 'utf8')) as SavedToken
  } catch (error) {
    throw new OperatorError(`cannot read the token file ${file} (${(error as NodeJS.ErrnoException).code ?? 'not JSON'}): run macgate login first`)
  }
  if (typeof saved.refresh_token !== 'string' || typeof saved.issuer !== 'string' || typeof saved.client_id !== 'string') {
    throw new OperatorError(`the token file ${file} has no refresh_token, issuer or client_id: run macgate login again`)
  }
  const auth = { clientId: saved.client_id, secret: await clientSecret(values['client-secret-file'], env) }
  const endpoints = await discover(saved.issuer)
  const { status, body } = await post(endpoints.token, auth, { grant_type: 'refresh_token', refresh_token: saved.refresh_token })
  if (status !== 200) throw refusal('the refresh', body)
  await save(file, issued(body, saved.issuer, saved.client_id))
  stdout.write(`Refreshed: the new token is in ${file}\n`)
}

/** `macgate login --issuer URL --client-id ID [--scope S] [--client-secret-file F] [--out F]`, or `--refresh`. */
export async function loginCommand (args: string[], io: CommandIO): Promise<void> {
  const { values } = parseCommand('login', {
    args,
    options: {
      issuer: { type: 'string' },
      'client-id': { type: 'string' },
      scope: { type: 'string' },
      'client-secret-file': { type: 'string' },
      out: { type: 'string' },
      refresh: { type: 'boolean' }
    }
  }, { '--client-secret': 'login reads the secret from --client-secret-file or MACGATE_CLIENT_SECRET, never from an argument (which `ps` would show)' })
  if (values.refresh === true) {
    if (values.issuer !== undefined || values['client-id'] !== undefined || values.scope !== undefined) throw new UsageError('login --refresh takes the issuer, client and scope from the token file: give only --out and the secret')
    return await refresh(values, io)
  }
  return await login(values, io)
}
