import { text } from 'node:stream/consumers'
import { parseArgs } from 'node:util'
import { changePassword, createUser, removeUser } from '../../plugin/index.js'
import { withAdminStore } from './admin-store.js'
import { UsageError } from './usage.js'

/** Passwords come only from standard input, never from arguments that `ps` would show. */
async function passwordFromStdin (command: string, given: boolean | undefined): Promise<string> {
  if (given !== true) throw new UsageError(`${command} needs --password-stdin (the password on standard input)`)
  return (await text(process.stdin)).replace(/\r?\n$/, '')
}

async function add (args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { username: { type: 'string' }, 'password-stdin': { type: 'boolean' }, json: { type: 'boolean' } }
  })
  if (values.username === undefined) throw new UsageError('users add needs --username')
  const password = await passwordFromStdin('users add', values['password-stdin'])
  await withAdminStore(async (store) => {
    const { userId } = await createUser(store, values.username!, password)
    process.stdout.write(values.json === true ? `${JSON.stringify({ user_id: userId })}\n` : `user_id: ${userId}\n`)
  })
}

async function passwd (args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { username: { type: 'string' }, 'password-stdin': { type: 'boolean' } } })
  if (values.username === undefined) throw new UsageError('users passwd needs --username')
  const password = await passwordFromStdin('users passwd', values['password-stdin'])
  await withAdminStore(async (store) => {
    await changePassword(store, values.username!, password)
    process.stdout.write(`changed the password of ${values.username!} and ended their sessions\n`)
  })
}

async function remove (args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true })
  if (positionals.length !== 1) throw new UsageError('users remove needs exactly one username')
  await withAdminStore(async (store) => {
    await removeUser(store, positionals[0]!)
    process.stdout.write(`removed user ${positionals[0]!} and ended their sessions\n`)
  })
}

export async function usersCommand (subcommand: string | undefined, args: string[]): Promise<void> {
  if (subcommand === 'add') return await add(args)
  if (subcommand === 'passwd') return await passwd(args)
  if (subcommand === 'remove') return await remove(args)
  throw new UsageError(`users needs add, passwd or remove${subcommand === undefined ? '' : `, not ${subcommand}`}`)
}
