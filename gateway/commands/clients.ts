import { parseArgs } from 'node:util'
import { registerClient, rotateClientSecret, ScopeRegistry } from '../../plugin/index.js'
import { withAdminStore } from './admin-store.js'
import { UsageError } from './usage.js'

async function add (args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      scope: { type: 'string' },
      'response-types': { type: 'string' },
      'require-pkce': { type: 'boolean' },
      'resource-server': { type: 'boolean' },
      'mac-algorithm': { type: 'string' },
      json: { type: 'boolean' }
    }
  })
  if (values.name === undefined) throw new UsageError('clients add needs --name')
  if (values['redirect-uri'] === undefined) throw new UsageError('clients add needs --redirect-uri')
  const macAlgorithm = values['mac-algorithm']
  if (macAlgorithm !== undefined && macAlgorithm !== 'HmacSha1' && macAlgorithm !== 'HmacSha256') throw new UsageError(`--mac-algorithm must be HmacSha1 or HmacSha256, not ${macAlgorithm}`)
  const responseTypes = values['response-types']?.split(',').map((type) => type.trim()) as Array<'code' | 'token'> | undefined
  await withAdminStore(async (store) => {
    const { client, clientSecret } = await registerClient(store, new ScopeRegistry(), {
      name: values.name!,
      redirectUris: values['redirect-uri']!,
      ...(values.scope !== undefined && { scope: values.scope }),
      ...(responseTypes !== undefined && { responseTypes }),
      requirePkce: values['require-pkce'] ?? false,
      resourceServer: values['resource-server'] ?? false,
      ...(macAlgorithm !== undefined && { macAlgorithm })
    })
    if (values.json === true) {
      process.stdout.write(`${JSON.stringify({ client_id: client.id, client_secret: clientSecret })}\n`)
    } else {
      process.stdout.write(`client_id:     ${client.id}\nclient_secret: ${clientSecret}\n(the secret is shown only now)\n`)
    }
  })
}

async function list (args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean' } } })
  await withAdminStore(async (store) => {
    const clients = (await store.listClients()).map(({ secretHash, ...client }) => client)
    if (values.json === true) {
      process.stdout.write(`${JSON.stringify(clients)}\n`)
      return
    }
    for (const client of clients) {
      process.stdout.write(`${client.id}  ${client.name}  scope="${client.scopes.join(' ')}"  ${client.responseTypes.join(',')}  ${client.redirectUris.join(' ')}\n`)
    }
  })
}

async function remove (args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true })
  if (positionals.length !== 1) throw new UsageError('clients remove needs exactly one client id')
  await withAdminStore(async (store) => {
    if (!await store.removeClient(positionals[0]!)) throw new UsageError(`no client ${positionals[0]!}`)
    process.stdout.write(`removed client ${positionals[0]!} and revoked its tokens\n`)
  })
}

async function rotateSecret (args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { 'grace-seconds': { type: 'string' }, json: { type: 'boolean' } } })
  if (positionals.length !== 1) throw new UsageError('clients rotate-secret needs exactly one client id')
  const grace = values['grace-seconds'] === undefined ? 86_400 : Number(values['grace-seconds'])
  if (!Number.isSafeInteger(grace) || grace < 0) throw new UsageError(`--grace-seconds must be whole seconds, 0 or more, not ${values['grace-seconds']}`)
  const clientId = positionals[0]!
  await withAdminStore(async (store) => {
    const { clientSecret } = await rotateClientSecret(store, clientId, grace)
    if (values.json === true) {
      process.stdout.write(`${JSON.stringify({ client_id: clientId, client_secret: clientSecret })}\n`)
      return
    }
    process.stdout.write(`client_id:     ${clientId}\nclient_secret: ${clientSecret}\n(the secret is shown only now; the previous one works for ${grace} more seconds)\n`)
  })
}

export async function clientsCommand (subcommand: string | undefined, args: string[]): Promise<void> {
  if (subcommand === 'add') return await add(args)
  if (subcommand === 'list') return await list(args)
  if (subcommand === 'remove') return await remove(args)
  if (subcommand === 'rotate-secret') return await rotateSecret(args)
  throw new UsageError(`clients needs add, list, remove or rotate-secret${subcommand === undefined ? '' : `, not ${subcommand}`}`)
}
