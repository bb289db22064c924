#!/usr/bin/env node
import cluster from 'node:cluster'
import { RegistrationError } from '../plugin/index.js'
import { clientsCommand } from './commands/clients.js'
import { startCommand } from './commands/start.js'
import { usersCommand } from './commands/users.js'
import { UsageError, usage } from './commands/usage.js'

async function main (argv: string[]): Promise<void> {
  const [command, subcommand, ...rest] = argv
  if (command === 'start') return await startCommand(argv.slice(1))
  if (command === 'clients') return await clientsCommand(subcommand, rest)
  if (command === 'users') return await usersCommand(subcommand, rest)
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(usage)
    return
  }
  throw new UsageError(`unknown command ${command}`)
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // Operator mistakes get one line and exit 2; anything else exits 1, still without a stack.
  const known = error instanceof UsageError || error instanceof RegistrationError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
  process.stderr.write(`macgate: ${(error as Error).message}\n${error instanceof UsageError ? 'Run `macgate help` for usage.\n' : ''}`)
  process.exitCode = known ? 2 : 1
  // A worker of `start --workers` is held open by its channel to the primary: end it now.
  if (cluster.isWorker) process.exit()
})
