import { parseArgs, type ParseArgsConfig } from 'node:util'

/**
 * Something the operator must fix that is not a mistake in the command line: an unreachable or
 * malformed REDIS_URL, a bad config file, `no client 12345`. One line, exit 2, no usage hint.
 */
export class OperatorError extends Error {
  override name = 'OperatorError'
}

/**
 * A mistake in the command line itself: an unknown command or option, a missing argument, an
 * argument's bad value. Like any OperatorError, plus the hint to run `macgate help`.
 */
export class UsageError extends OperatorError {
  override name = 'UsageError'
}

/**
 * `parseArgs` for one command (strict), whose refusals name the command and its options instead of
 * Node's generic text. `hints` answers options people reach for that the command refuses on
 * purpose (e.g. `--password`, which would show the password to `ps`).
 */
export function parseCommand<T extends ParseArgsConfig> (command: string, config: T, hints: Record<string, string> = {}): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs<T>(config)
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === undefined || !code.startsWith('ERR_PARSE_ARGS')) throw error
    const known = Object.keys(config.options ?? {}).map((name) => `--${name}`)
    const listed = known.length === 0 ? 'it takes no options' : `its options: ${known.join(', ')}`
    const quoted = /'([^']*)'/.exec((error as Error).message)?.[1] ?? ''
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const hint = hints[quoted]
      // An argument such as an id that starts with one dash reads as short options; after `--` it does not.
      const dashed = config.allowPositionals === true && !quoted.startsWith('--') ? `; an argument starting with a dash goes after --: ${command} -- -ARGUMENT` : ''
      throw new UsageError(`Unknown option '${quoted}' for ${command}${hint === undefined ? ` (${listed}${dashed})` : `: ${hint}`}`)
    }
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') throw new UsageError(`${command} takes no argument ${quoted} (${listed})`)
    // A value left out: Node's text is `Option '--name <value>' argument missing`, or `Option '--name'
    // argument is ambiguous. ...` when the next argument is an option.
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && !(error as Error).message.includes('does not take an argument')) {
      const name = quoted.split(' ')[0]!
      // Ambiguous: the next argument starts with a dash (`--grace-seconds -1` as much as `--name --json`).
      const dashed = (error as Error).message.includes('ambiguous') ? ` (a value starting with a dash is written ${name}=-VALUE)` : ''
      throw new UsageError(`${command}: ${name} needs a value${dashed}`)
    }
    // Node's own words otherwise: `Option '--json' does not take an argument` (--json=yes).
    throw new UsageError(`${command}: ${(error as Error).message}`)
  }
}

export const usage = `Usage: macgate <command>

  start [--config FILE] [--workers N|auto] [--tls-cert FILE --tls-key FILE]
                              serve the gateway (PORT, default 8080; HOST, default 127.0.0.1);
                              N processes share the port (MACGATE_WORKERS; needs a shared store)
  start --config FILE         the gateway config, JSON: "upstream" (the API to proxy to), its
                              "routes" (path, methods, scopes each needs) and the settings;
                              a bad field fails the start with its name (see README, Running).
                              Without --config and MACGATE_UPSTREAM: the sample open API.
  start --tls-cert FILE --tls-key FILE
                              serve TLS 1.2/1.3 with HTTP/2 and HTTP/1.1 (PEM files; they replace
                              the config's "tls"); SIGHUP reads them again (README, Running at the edge)
  clients add --name NAME --redirect-uri URI [--redirect-uri URI2] [--scope "1 3"]
              [--response-types code,token | --grant-types code,implicit,device]
              [--require-pkce] [--resource-server] [--public] [--allowed-origin ORIGIN]... [--mac-algorithm HmacSha1|HmacSha256]
              [--quota-per-minute N] [--json]
                              --public: an app in a browser, no secret, PKCE (code grant unless
                              --response-types says token too); its redirect URIs' origins and
                              each --allowed-origin may call the open API from a browser (CORS);
                              --grant-types: code (with refresh_token), implicit, device (with
                              refresh_token); the token endpoints refuse any other grant
  clients list [--json]
  clients show ID [--config FILE] [--json]
                              the client, and its quota on each limited route of FILE with this
                              minute's use over every instance
  clients update ID [--redirect-uri URI]... [--allowed-origin ORIGIN]... [--no-allowed-origins]
              [--response-types code,token] [--grant-types code,implicit,device]
              [--quota-per-minute N | --no-quota] [--json]
                              an option given replaces that field (a list: the whole list);
                              --no-quota: the routes' default quotas apply again
  clients remove ID
  clients rotate-secret ID [--grace-seconds S] [--json]
                              a new secret; the old one works S more seconds (default 86400)
  registration-tokens create [--uses N] [--expires-in SECONDS] [--json]
                              an initial access token for registration mode "token" (RFC 7591):
                              N registrations (default 1) within SECONDS (default 86400);
                              printed once, kept hashed
  registration-tokens list [--json]
  registration-tokens revoke ID
  users add --username NAME --password-stdin [--json]
  users passwd --username NAME --password-stdin    (ends the user's sessions)
                              the password is read from standard input, never an argument:
                              printf '%s\\n' "$PASSWORD" | macgate users add --username NAME --password-stdin
  users remove NAME                                (ends the user's sessions)
  users update NAME --developer | --no-developer   (may use the developer console)
  load --url URL [--method GET] [--path P]... [--paths FILE] [--connections 50]
       [--duration 30s | --amount N] [--rate R] [--credentials FILE] [--distribution zipf]
       [--json] [--out DIR]
                              signed load on a deployment, each request a fresh nonce and mac;
                              one token from MACGATE_ACCESS_TOKEN and MACGATE_MAC_KEY (or
                              --access-token, --mac-key), or many: --credentials FILE (JSON lines
                              or CSV of access_token,mac_key), in turn or by Zipf. --paths FILE:
                              a line each, PATH[?QUERY] [WEIGHT]. --out DIR: JSON report and SVG chart
  load --url URL --token-endpoint FILE --client-id ID [--grant-type refresh_token]
       [--redirect-uri URI] [--method POST|GET] [--amount N]
                              spends the file's codes (or refresh tokens), one a line, at
                              /oauth2/token; client secret from MACGATE_CLIENT_SECRET
  login --issuer URL --client-id ID [--scope "1 3"] [--client-secret-file FILE] [--out FILE]
                              sign in as a user with the device grant (a client registered with
                              --grant-types device): shows a code and URL (a QR code on a
                              terminal), waits for approval, writes the token answer (mode 0600)
                              to FILE, default $XDG_CONFIG_HOME/macgate/token.json (~/.config),
                              which load --credentials reads; secret also MACGATE_CLIENT_SECRET
  login --refresh [--out FILE] [--client-secret-file FILE]
                              renews that token with its refresh token

Environment: REDIS_URL (redis://[user:password@]host[:port][/db], rediss:// for TLS),
or REDIS_CLUSTER_NODES=host:port,host:port,... for a Redis Cluster
(neither: embedded store, only inside \`macgate start\`),
MACGATE_REDIS_PREFIX (default macgate:), MACGATE_SECRET (default: one kept in the store),
MACGATE_UPSTREAM (the config's upstream; its routes still come from --config FILE).
`
