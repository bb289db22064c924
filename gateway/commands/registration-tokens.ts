import { createRegistrationToken, listRegistrationTokens, REGISTRATION_TOKEN_DEFAULTS, revokeRegistrationToken, type RegistrationTokenRecord } from '../../plugin/index.ts'
import { withAdminStore } from './command-store.ts'
import type { CommandIO } from './io.ts'
import { parseCommand, UsageError } from './usage.ts'

/** A positive whole number option, or undefined when not given. */
function wholeOf (value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined
  if (!/^[1-9][0-9]*$/.test(value)) throw new UsageError(`${option} must be a whole number, 1 or more, not ${value}`)
  return Number(value)
}

/** A token as operators read it: never its value or hash. */
function view (token: RegistrationTokenRecord): object {
  return { id: token.id, uses: token.uses, uses_left: token.usesLeft, expires_at: new Date(token.expiresAt).toISOString(), created_at: new Date(token.createdAt).toISOString() }
}

async function create (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { values } = parseCommand('registration-tokens create', { args, options: { uses: { type: 'string' }, 'expires-in': { type: 'string' }, json: { type: 'boolean' } } })
  const uses = wholeOf(values.uses, '--uses') ?? REGISTRATION_TOKEN_DEFAULTS.uses
  const expiresInSeconds = wholeOf(values['expires-in'], '--expires-in') ?? REGISTRATION_TOKEN_DEFAULTS.expiresInSeconds
  await withAdminStore(env, async (store) => {
    const { token, record } = await createRegistrationToken(store, { uses, expiresInSeconds })
    if (values.json === true) {
      stdout.write(`${JSON.stringify({ ...view(record), token })}\n`)
      return
    }
    stdout.write(`id:    ${record.id}\ntoken: ${token}\n(the token is shown only now; ${uses} registration${uses === 1 ? '' : 's'} until ${new Date(record.expiresAt).toISOString()})\n`)
  })
}

async function list (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { values } = parseCommand('registration-tokens list', { args, options: { json: { type: 'boolean' } } })
  await withAdminStore(env, async (store) => {
    const tokens = await listRegistrationTokens(store)
    if (values.json === true) {
      stdout.write(`${JSON.stringify(tokens.map(view))}\n`)
      return
    }
    if (tokens.length === 0) {
      stdout.write('no registration tokens (make one with `macgate registration-tokens create`)\n')
      return
    }
    stdout.write(['ID            USES_LEFT  EXPIRES_AT', ...tokens.map((token) => `${token.id.padEnd(12)}  ${`${token.usesLeft}/${token.uses}`.padEnd(9)}  ${new Date(token.expiresAt).toISOString()}`)].join('\n') + '\n')
  })
}

async function revoke (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { positionals } = parseCommand('registration-tokens revoke', { args, allowPositionals: true })
  if (positionals.length !== 1) throw new UsageError('registration-tokens revoke needs exactly one token id')
  await withAdminStore(env, async (store) => {
    await revokeRegistrationToken(store, positionals[0]!)
    stdout.write(`revoked registration token ${positionals[0]!}\n`)
  })
}

/** `macgate registration-tokens`: the initial access tokens of registration mode `token` (RFC 7591 §3). */
export async function registrationTokensCommand (subcommand: string | undefined, args: string[], io: CommandIO): Promise<void> {
  if (subcommand === 'create') return await create(args, io)
  if (subcommand === 'list') return await list(args, io)
  if (subcommand === 'revoke') return await revoke(args, io)
  throw new UsageError(`registration-tokens needs create, list or revoke${subcommand === undefined ? '' : `, not ${subcommand}`}`)
}
