#!/usr/bin/env node
import cluster from 'node:cluster'
import { RegistrationError } from '../plugin/index.js'
import { clientsCommand } from './commands/clients.js'
import { loadCommand } from './commands/load.js'
import { startCommand } from './commands/start.js'
import { usersCommand } from './commands/users.js'
import { OperatorError, UsageError, usage } from './commands/usage.js'

async function main (argv: string[]): Promise<void> {
  const [command, subcommand, ...rest] = argv
  if (command === 'start') return await startCommand(argv.slice(1))
  if (command === 'clients') return await clientsCommand(subcommand, rest)
  if (command === 'users') return await usersCommand(subcommand, rest)
  if (command === 'load') return await loadCommand(argv.slice(1))
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(usage)
    return
  }
  throw new UsageError(`unknown command ${command}`)
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // What the operator must fix gets one line and exit 2; anything else exits 1, still without a
  // stack. Only a mistake in the command line itself adds the pointer to `macgate help`: after
  // `no client 12345` or an unreachable Redis the usage text would only mislead.
  const usageMistake = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true
  const known = usageMistake || error instanceof OperatorError || error instanceof RegistrationError
  process.stderr.write(`macgate: ${(error as Error).message}\n${usageMistake ? 'Run `macgate help` for usage.\n' : ''}`)
  process.exitCode = known ? 2 : 1
  // A worker of `start --workers` is held open by its channel to the primary: end it now.
  if (cluster.isWorker) process.exit()
})
