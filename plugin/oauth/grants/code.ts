import { createHash } from 'node:crypto'
import { constantTimeEqual } from '../../access/constant-time.ts'
import { errors } from '../../http/errors.ts'
import type { MacgateContext } from '../../config/options.ts'
import type { ClientRecord, CodeRecord } from '../../store/store.ts'
import { required, single, type Params } from '../../http/params.ts'
import { checkRedirectUri } from './redirect-check.ts'
import { issueGrantTokens } from './grant-tokens.ts'
import { checkUsed, readOnce, type UseOnce } from './use-once.ts'

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/

/** RFC 7636 S256: the verifier must hash to the challenge remembered with the code. */
function checkVerifier (client: ClientRecord, code: CodeRecord, params: Params): void {
  const verifier = single(params, 'code_verifier')
  // A public client's code always has one (it requires PKCE): without, it was not issued as such.
  if (client.public === true && code.codeChallenge === undefined) throw errors.invalidGrant('a public client\'s code needs a code_challenge')
  // RFC 9700 §2.1.1: a verifier for a code issued without a challenge is a downgrade attempt.
  if (code.codeChallenge === undefined) {
    if (verifier !== undefined) throw errors.invalidGrant('code_verifier sent for a code issued without code_challenge')
    return
  }
  if (verifier === undefined) throw errors.invalidGrant('code_verifier is required')
  if (!VERIFIER.test(verifier)) throw errors.invalidRequest('code_verifier malformed')
  if (!constantTimeEqual(createHash('sha256').update(verifier).digest('base64url'), code.codeChallenge)) throw errors.invalidGrant('code_verifier does not match')
}

/** grant_type=authorization_code: one success per code, a replay revokes what it gave. */
export async function exchangeCode (config: MacgateContext, client: ClientRecord, params: Params): Promise<object> {
  const { store } = config
  const redirectUri = checkRedirectUri(config, client, params)
  const kind: UseOnce<CodeRecord> = { name: 'code', read: store.getCode.bind(store), used: (code) => code.used === true, invalid: errors.invalidCode }
  const { grantId, hash: codeHash, record } = await readOnce(config, client, redirectUri, required(params, 'code'), kind)
  checkVerifier(client, record, params)

  const { tokens, body } = await issueGrantTokens(config, client, { grantId, userId: record.userId, scope: record.scope }, record.redirectUri)
  checkUsed(config, kind, grantId, client.id, await store.redeemCode(codeHash, tokens))
  config.events.record('code.exchanged', { grantId, clientId: client.id, userId: record.userId })
  return body
}
