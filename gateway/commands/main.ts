import { RegistrationError } from '../../plugin/index.ts'
import { clientsCommand } from './clients.ts'
import { processIO, type CommandIO } from './io.ts'
import { loadCommand } from './load.ts'
import { loginCommand } from './login.ts'
import { registrationTokensCommand } from './registration-tokens.ts'
import { startCommand } from './start.ts'
import { usersCommand } from './users.ts'
import { OperatorError, UsageError, usage } from './usage.ts'

/** Runs one `macgate` command line (the arguments after `macgate`) with `io`'s environment and streams. */
export async function main (argv: string[], io: CommandIO = processIO()): Promise<void> {
  const [command, subcommand, ...rest] = argv
  if (command === 'start') return await startCommand(argv.slice(1), io)
  if (command === 'clients') return await clientsCommand(subcommand, rest, io)
  if (command === 'users') return await usersCommand(subcommand, rest, io)
  if (command === 'registration-tokens') return await registrationTokensCommand(subcommand, rest, io)
  if (command === 'load') return await loadCommand(argv.slice(1), io.env, io)
  if (command === 'login') return await loginCommand(argv.slice(1), io)
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    io.stdout.write(usage)
    return
  }
  throw new UsageError(`unknown command ${command}`)
}

/**
 * What a command that failed with `error` writes on stderr, and its exit code. What the operator
 * must fix gets one line and exit 2; anything else exits 1, still without a stack. Only a mistake
 * in the command line itself adds the pointer to `macgate help`: after `no client 12345` or an
 * unreachable Redis the usage text would only mislead.
 */
export function failure (error: unknown): { stderr: string, exitCode: 1 | 2 } {
  const usageMistake = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true
  const known = usageMistake || error instanceof OperatorError || error instanceof RegistrationError
  return {
    stderr: `macgate: ${(error as Error).message}\n${usageMistake ? 'Run `macgate help` for usage.\n' : ''}`,
    exitCode: known ? 2 : 1
  }
}
