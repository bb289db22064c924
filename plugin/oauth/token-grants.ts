import type { FastifyRequest } from 'fastify'
import type { MacgateContext } from '../config/options.ts'
import { servedClient } from '../cors/token-endpoint.ts'
import { errors, toOAuthError, type OAuthError } from '../http/errors.ts'
import { single, type Params } from '../http/params.ts'
import type { ClientRecord } from '../store/store.ts'
import { checkGrantAllowed } from './grants/allowed-grant.ts'

/** A grant's handler: the token set it issues the client for the request's parameters. */
export type GrantHandler = (config: MacgateContext, client: ClientRecord, params: Params) => Promise<object>

/**
 * A token endpoint's grants, by grant type, and what each request asked for: both token endpoints
 * read the grant type, issue through its grant and count their refusals alike, whatever their
 * parameters and answers.
 */
export class TokenGrants {
  readonly #grants: Readonly<Record<string, GrantHandler>>
  /** The grant type each request asked for, as a metric label: one of ours, else `other` (never the client's text). */
  readonly #labels = new WeakMap<FastifyRequest, string>()

  constructor (grants: Readonly<Record<string, GrantHandler>>) {
    this.#grants = grants
  }

  /** The request's grant type: refused when missing (invalid request) or not one served here (before any store read). */
  grantTypeOf (request: FastifyRequest, params: Params): string {
    const grantType = single(params, 'grant_type')
    if (grantType === undefined || grantType === '') throw errors.invalidRequest('grant_type is missing')
    const known = Object.hasOwn(this.#grants, grantType)
    this.#labels.set(request, known ? grantType : 'other')
    if (!known) throw errors.unsupportedGrantType()
    return grantType
  }

  /** The request's label in `macgate_token_requests_total`: `none` when it named no grant type. */
  labelOf (request: FastifyRequest): string {
    return this.#labels.get(request) ?? 'none'
  }

  /** The authenticated client served (for CORS), allowed the grant, issued its tokens, counted. */
  async issue (config: MacgateContext, request: FastifyRequest, client: ClientRecord, grantType: string, params: Params): Promise<object> {
    servedClient(request, client)
    checkGrantAllowed(client, grantType)
    const body = await this.#grants[grantType]!(config, client, params)
    config.metrics.tokenRequests.labels(grantType, 'issued').inc()
    return body
  }

  /** The request's failure as the endpoint answers it, logged as `failed` when it is ours (internal), counted. */
  refused (config: MacgateContext, request: FastifyRequest, error: unknown, failed: string): OAuthError {
    const failure = toOAuthError(error)
    if (errors.internal.is(failure)) request.log.error({ err: error }, failed)
    config.metrics.tokenRequests.labels(this.labelOf(request), failure.kind).inc()
    return failure
  }
}
