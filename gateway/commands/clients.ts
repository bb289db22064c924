import { clientWithoutSecrets, grantTypesOfShortNames, registerClient, removeClient, rotateClientSecret, ScopeRegistry, shortNamesOf, updateClient, type ClientRecord, type ClientUpdate, type GrantType } from '../../plugin/index.ts'
import { withAdminStore } from './command-store.ts'
import type { CommandIO } from './io.ts'
import { parseCommand, UsageError } from './usage.ts'
import { show } from './client-show.ts'

async function add (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { values } = parseCommand('clients add', {
    args,
    options: {
      name: { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      scope: { type: 'string' },
      'response-types': { type: 'string' },
      'grant-types': { type: 'string' },
      'require-pkce': { type: 'boolean' },
      public: { type: 'boolean' },
      'allowed-origin': { type: 'string', multiple: true },
      'resource-server': { type: 'boolean' },
      'mac-algorithm': { type: 'string' },
      'quota-per-minute': { type: 'string' },
      json: { type: 'boolean' }
    }
  })
  const quotaPerMinute = quotaOf(values['quota-per-minute'])
  if (values.name === undefined) throw new UsageError('clients add needs --name')
  if (values['redirect-uri'] === undefined) throw new UsageError('clients add needs --redirect-uri')
  const macAlgorithm = values['mac-algorithm']
  if (macAlgorithm !== undefined && macAlgorithm !== 'HmacSha1' && macAlgorithm !== 'HmacSha256') throw new UsageError(`--mac-algorithm must be HmacSha1 or HmacSha256, not ${macAlgorithm}`)
  const responseTypes = responseTypesOf(values['response-types'])
  const grantTypes = grantTypesOf(values['grant-types'])
  await withAdminStore(env, async (store) => {
    const { client, clientSecret } = await registerClient(store, new ScopeRegistry(), {
      name: values.name!,
      redirectUris: values['redirect-uri']!,
      ...(values.scope !== undefined && { scope: values.scope }),
      ...(responseTypes !== undefined && { responseTypes }),
      ...(grantTypes !== undefined && { grantTypes }),
      ...(values['require-pkce'] !== undefined && { requirePkce: values['require-pkce'] }),
      public: values.public ?? false,
      ...(values['allowed-origin'] !== undefined && { allowedOrigins: values['allowed-origin'] }),
      resourceServer: values['resource-server'] ?? false,
      ...(macAlgorithm !== undefined && { macAlgorithm }),
      ...(quotaPerMinute !== undefined && { quotaPerMinute })
    })
    if (clientSecret === undefined) {
      // A public client has no secret: nothing to show, and nothing to keep.
      const origins = clientOriginsLine(client)
      if (values.json === true) stdout.write(`${JSON.stringify({ client_id: client.id, public: true })}\n`)
      else stdout.write(`client_id:     ${client.id}\n(a public client: no secret; PKCE required; browser origins: ${origins})\n`)
    } else if (values.json === true) {
      stdout.write(`${JSON.stringify({ client_id: client.id, client_secret: clientSecret })}\n`)
    } else {
      stdout.write(`client_id:     ${client.id}\nclient_secret: ${clientSecret}\n(the secret is shown only now)\n`)
    }
  })
}

/** `--quota-per-minute N`: a whole number (0 blocks); the range is registration's to check. */
function quotaOf (value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  if (!/^[0-9]+$/.test(value)) throw new UsageError(`--quota-per-minute must be a whole number of requests (0 blocks), not ${value}`)
  return Number(value)
}

function responseTypesOf (value: string | undefined): Array<'code' | 'token'> | undefined {
  return value?.split(',').map((type) => type.trim()) as Array<'code' | 'token'> | undefined
}

/** `--grant-types code,implicit,device`: short names, `code` and `device` bringing `refresh_token`. */
function grantTypesOf (value: string | undefined): GrantType[] | undefined {
  if (value === undefined) return undefined
  const named = grantTypesOfShortNames(value.split(',').map((name) => name.trim()))
  if ('problem' in named) throw new UsageError(`--grant-types: ${named.problem}`)
  return named.grantTypes
}

function clientOriginsLine (client: Pick<ClientRecord, 'redirectUris' | 'allowedOrigins'>): string {
  const origins = new Set([...client.redirectUris.map((uri) => URL.canParse(uri) ? new URL(uri).origin : uri), ...client.allowedOrigins ?? []])
  return [...origins].join(' ')
}

/**
 * `clients update ID`: each option given replaces that field (a repeatable one, the whole list);
 * one left out stays. `--no-allowed-origins` removes them all. New fields join `ClientUpdate`.
 */
async function update (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { values, positionals } = parseCommand('clients update', {
    args,
    allowPositionals: true,
    options: {
      'redirect-uri': { type: 'string', multiple: true },
      'allowed-origin': { type: 'string', multiple: true },
      'no-allowed-origins': { type: 'boolean' },
      'response-types': { type: 'string' },
      'grant-types': { type: 'string' },
      'quota-per-minute': { type: 'string' },
      'no-quota': { type: 'boolean' },
      json: { type: 'boolean' }
    }
  })
  if (positionals.length !== 1) throw new UsageError('clients update needs exactly one client id')
  if (values['no-quota'] === true && values['quota-per-minute'] !== undefined) throw new UsageError('clients update takes --quota-per-minute or --no-quota, not both')
  const quotaPerMinute = values['no-quota'] === true ? null : quotaOf(values['quota-per-minute'])
  if (values['no-allowed-origins'] === true && values['allowed-origin'] !== undefined) throw new UsageError('clients update takes --allowed-origin or --no-allowed-origins, not both')
  const responseTypes = responseTypesOf(values['response-types'])
  const grantTypes = grantTypesOf(values['grant-types'])
  const changes: ClientUpdate = {
    ...(values['redirect-uri'] !== undefined && { redirectUris: values['redirect-uri'] }),
    ...(values['allowed-origin'] !== undefined && { allowedOrigins: values['allowed-origin'] }),
    ...(values['no-allowed-origins'] === true && { allowedOrigins: [] }),
    ...(responseTypes !== undefined && { responseTypes }),
    ...(grantTypes !== undefined && { grantTypes }),
    ...(quotaPerMinute !== undefined && { quotaPerMinute })
  }
  if (Object.keys(changes).length === 0) throw new UsageError('clients update needs something to change: --redirect-uri, --allowed-origin, --no-allowed-origins, --response-types, --grant-types, --quota-per-minute or --no-quota')
  await withAdminStore(env, async (store) => {
    const client = clientWithoutSecrets(await updateClient(store, positionals[0]!, changes))
    if (values.json === true) {
      stdout.write(`${JSON.stringify(client)}\n`)
      return
    }
    stdout.write(`updated client ${client.id}: redirect URIs ${client.redirectUris.join(' ')}; response types ${client.responseTypes.join(',')}; grant types ${shortNamesOf(client.grantTypes).join(',')}; browser origins ${clientOriginsLine(client)}\n`)
  })
}

async function list (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { values } = parseCommand('clients list', { args, options: { json: { type: 'boolean' } } })
  await withAdminStore(env, async (store) => {
    const clients = (await store.listClients()).map(clientWithoutSecrets)
    if (values.json === true) {
      stdout.write(`${JSON.stringify(clients)}\n`)
      return
    }
    if (clients.length === 0) {
      stdout.write('no clients registered (add one with `macgate clients add`)\n')
      return
    }
    stdout.write(table(clients))
  })
}

type Shown = ReturnType<typeof clientWithoutSecrets>

const COLUMNS: Array<[string, (client: Shown) => string]> = [
  ['CLIENT_ID', (client) => client.id],
  ['NAME', (client) => client.name],
  ['SCOPE', (client) => client.scopes.join(' ')],
  ['RESPONSE_TYPES', (client) => client.responseTypes.join(',') || '-'],
  ['GRANT_TYPES', (client) => shortNamesOf(client.grantTypes).join(',')],
  ['TYPE', (client) => `${client.public === true ? 'public' : 'confidential'}${client.selfRegistration === undefined ? '' : ',self-registered'}`],
  ['PKCE', (client) => client.requirePkce ? 'required' : 'optional'],
  ['RESOURCE_SERVER', (client) => client.resourceServer === true ? 'yes' : 'no'],
  ['MAC_ALGORITHM', (client) => client.macAlgorithm ?? 'HmacSha1'],
  ['ALLOWED_ORIGINS', (client) => client.allowedOrigins?.join(' ') ?? '-'],
  ['REDIRECT_URIS', (client) => client.redirectUris.join(' ')]
]

/** One line per client under a header, columns padded to their widest cell (the last one is not). */
function table (clients: Shown[]): string {
  const rows = [COLUMNS.map(([title]) => title), ...clients.map((client) => COLUMNS.map(([, cell]) => cell(client)))]
  const widths = COLUMNS.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows.map((row) => row.map((cell, column) => column === row.length - 1 ? cell : cell.padEnd(widths[column]!)).join('  ')).join('\n') + '\n'
}

async function remove (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { positionals } = parseCommand('clients remove', { args, allowPositionals: true })
  if (positionals.length !== 1) throw new UsageError('clients remove needs exactly one client id')
  await withAdminStore(env, async (store) => {
    await removeClient(store, positionals[0]!)
    stdout.write(`removed client ${positionals[0]!} and revoked its tokens\n`)
  })
}

async function rotateSecret (args: string[], { env, stdout }: CommandIO): Promise<void> {
  const { values, positionals } = parseCommand('clients rotate-secret', { args, allowPositionals: true, options: { 'grace-seconds': { type: 'string' }, json: { type: 'boolean' } } })
  if (positionals.length !== 1) throw new UsageError('clients rotate-secret needs exactly one client id')
  const grace = values['grace-seconds'] === undefined ? 86_400 : Number(values['grace-seconds'])
  if (!Number.isSafeInteger(grace) || grace < 0) throw new UsageError(`--grace-seconds must be whole seconds, 0 or more, not ${values['grace-seconds']}`)
  const clientId = positionals[0]!
  await withAdminStore(env, async (store) => {
    const { clientSecret } = await rotateClientSecret(store, clientId, grace)
    if (values.json === true) {
      stdout.write(`${JSON.stringify({ client_id: clientId, client_secret: clientSecret })}\n`)
      return
    }
    stdout.write(`client_id:     ${clientId}\nclient_secret: ${clientSecret}\n(the secret is shown only now; the previous one works for ${grace} more seconds)\n`)
  })
}

export async function clientsCommand (subcommand: string | undefined, args: string[], io: CommandIO): Promise<void> {
  if (subcommand === 'add') return await add(args, io)
  if (subcommand === 'list') return await list(args, io)
  if (subcommand === 'update') return await update(args, io)
  if (subcommand === 'show') return await show(args, io)
  if (subcommand === 'remove') return await remove(args, io)
  if (subcommand === 'rotate-secret') return await rotateSecret(args, io)
  throw new UsageError(`clients needs add, list, show, update, remove or rotate-secret${subcommand === undefined ? '' : `, not ${subcommand}`}`)
}
