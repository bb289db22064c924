export class UsageError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

export const usage = `Usage: macgate <command>

  start                       serve the gateway (PORT, default 8080; HOST, default 127.0.0.1)
  clients add --name NAME --redirect-uri URI [--redirect-uri URI2] [--scope "1 3"]
              [--response-types code,token] [--require-pkce] [--json]
  clients list [--json]
  clients remove ID
  users add --username NAME --password-stdin [--json]
  users passwd --username NAME --password-stdin    (ends the user's sessions)
  users remove NAME                                (ends the user's sessions)

Environment: REDIS_URL (absent: embedded store, only inside \`macgate start\`),
MACGATE_REDIS_PREFIX (default macgate:), MACGATE_SECRET (default: one kept in the store).
`
