import { text } from 'node:stream/consumers'
import { changePassword, createUser, removeUser, setDeveloper } from '../../plugin/index.ts'
import { withAdminStore } from './command-store.ts'
import type { CommandIO } from './io.ts'
import { parseCommand, UsageError } from './usage.ts'

/** What `--password` and its kin answer: where the password is read from, and why. */
function passwordHints (command: string): Record<string, string> {
  const hint = `${command} reads the password from standard input with --password-stdin, never from an argument (which \`ps\` and the shell history would show): printf '%s\\n' "$PASSWORD" | macgate ${command} --username NAME --password-stdin`
  return Object.fromEntries(['--password', '--pass', '--pw', '-p'].map((option) => [option, hint]))
}

/** Passwords come only from standard input, never from arguments that `ps` would show. */
async function passwordFromStdin (command: string, given: boolean | undefined, stdin: CommandIO['stdin']): Promise<string> {
  if (given !== true) throw new UsageError(`${command} needs --password-stdin (the password on standard input)`)
  return (await text(stdin)).replace(/\r?\n$/, '')
}

async function add (args: string[], { env, stdout, stdin }: CommandIO): Promise<void> {
  const { values } = parseCommand('users add', {
    args,
    options: { username: { type: 'string' }, 'password-stdin': { type: 'boolean' }, json: { type: 'boolean' } }
  }, passwordHints('users add'))
  if (values.username === undefined) throw new UsageError('users add needs --username')
  const password = await passwordFromStdin('users add', values['password-stdin'], stdin)
  await withAdminStore(env, async (store) => {
    const { userId } = await createUser(store, values.username!, password)
    stdout.write(values.json === true ? `${JSON.stringify({ user_id: userId })}\n` : `user_id: ${userId}\n`)
  })
}

async function passwd (args: string[], { env, stdout, stdin }: CommandIO): Promise<void> {
  const { values } = parseCommand('users passwd', { args, options: { username: { type: 'string' }, 'password-stdin': { type: 'boolean' } } }, passwordHints('users passwd'))
  if (values.username === undefined) throw new UsageError('users passwd needs --username')
  const password = await passwordFromStdin('users passwd', values['password-stdin'], stdin)
  await withAdminStore(env, async (store) => {
    await changePassword(store, values.username!, password)
    stdout.write(`changed the password of ${values.username!} and ended their sessions\n`)
  })
}

async function remove (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { positionals } = parseCommand('users remove', { args, allowPositionals: true })
  if (positionals.length !== 1) throw new UsageError('users remove needs exactly one username')
  await withAdminStore(env, async (store) => {
    const { grants } = await removeUser(store, positionals[0]!)
    stdout.write(`removed user ${positionals[0]!}, ended their sessions and revoked ${grants} grant${grants === 1 ? '' : 's'}\n`)
  })
}

/** `users update NAME --developer | --no-developer`: allows or stops the user's developer console. */
async function update (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { values, positionals } = parseCommand('users update', { args, allowPositionals: true, allowNegative: true, options: { developer: { type: 'boolean' } } })
  if (positionals.length !== 1) throw new UsageError('users update needs exactly one username')
  if (values.developer === undefined) throw new UsageError('users update needs --developer or --no-developer')
  await withAdminStore(env, async (store) => {
    await setDeveloper(store, positionals[0]!, values.developer!)
    stdout.write(`${positionals[0]!} ${values.developer! ? 'may now use' : 'may no longer use'} the developer console\n`)
  })
}

export async function usersCommand (subcommand: string | undefined, args: string[], io: CommandIO): Promise<void> {
  if (subcommand === 'add') return await add(args, io)
  if (subcommand === 'passwd') return await passwd(args, io)
  if (subcommand === 'remove') return await remove(args, io)
  if (subcommand === 'update') return await update(args, io)
  throw new UsageError(`users needs add, passwd, update or remove${subcommand === undefined ? '' : `, not ${subcommand}`}`)
}
