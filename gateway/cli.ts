#!/usr/bin/env node
import cluster from 'node:cluster'
import { failure, main } from './commands/main.ts'

main(process.argv.slice(2)).catch((error: unknown) => {
  const { stderr, exitCode } = failure(error)
  process.stderr.write(stderr)
  process.exitCode = exitCode
  // A worker of `start --workers` is held open by its channel to the primary: end it now.
  if (cluster.isWorker) process.exit()
})
