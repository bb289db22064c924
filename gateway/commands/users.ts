import { text } from 'node:stream/consumers'
import { parseArgs } from 'node:util'
import { createUser } from '../../plugin/index.js'
import { withAdminStore } from './admin-store.js'
import { UsageError } from './usage.js'

async function add (args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { username: { type: 'string' }, 'password-stdin': { type: 'boolean' }, json: { type: 'boolean' } }
  })
  if (values.username === undefined) throw new UsageError('users add needs --username')
  // Passwords come only from standard input, never from arguments that `ps` would show.
  if (values['password-stdin'] !== true) throw new UsageError('users add needs --password-stdin (the password on standard input)')
  const password = (await text(process.stdin)).replace(/\r?\n$/, '')
  await withAdminStore(async (store) => {
    const { userId } = await createUser(store, values.username!, password)
    process.stdout.write(values.json === true ? `${JSON.stringify({ user_id: userId })}\n` : `user_id: ${userId}\n`)
  })
}

export async function usersCommand (subcommand: string | undefined, args: string[]): Promise<void> {
  if (subcommand === 'add') return await add(args)
  throw new UsageError(`users needs add${subcommand === undefined ? '' : `, not ${subcommand}`}`)
}
