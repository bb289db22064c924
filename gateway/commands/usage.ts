export class UsageError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

export const usage = `Usage: macgate <command>

  start [--config FILE] [--workers N|auto]
                              serve the gateway (PORT, default 8080; HOST, default 127.0.0.1);
                              N processes share the port (MACGATE_WORKERS; needs a shared store)
  clients add --name NAME --redirect-uri URI [--redirect-uri URI2] [--scope "1 3"]
              [--response-types code,token] [--require-pkce] [--resource-server]
              [--mac-algorithm HmacSha1|HmacSha256] [--json]
  clients list [--json]
  clients remove ID
  clients rotate-secret ID [--grace-seconds S] [--json]
                              a new secret; the old one works S more seconds (default 86400)
  users add --username NAME --password-stdin [--json]
  users passwd --username NAME --password-stdin    (ends the user's sessions)
  users remove NAME                                (ends the user's sessions)

Environment: REDIS_URL, or REDIS_CLUSTER_NODES=host:port,host:port,... for a Redis Cluster
(neither: embedded store, only inside \`macgate start\`),
MACGATE_REDIS_PREFIX (default macgate:), MACGATE_SECRET (default: one kept in the store).
`
