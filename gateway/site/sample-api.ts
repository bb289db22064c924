import { createHash } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'

// The demo open API (contract section 8): an upstream that trusts the gateway's identity headers,
// as a real one behind macgate would, and answers in the open API's own shape.

function identity (request: FastifyRequest) {
  const header = (name: string): string => String(request.headers[`x-macgate-${name}`] ?? '')
  return { openId: header('open-id'), clientId: header('client-id'), userId: header('user-id'), scope: header('scope').split(' ') }
}

function ok (data: object) {
  return { result: 'ok', description: 'success', data, code: 0 }
}

/** A stable, non-reversible stand-in for per-user data the sample API has no database for. */
function digest (text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

export function buildSampleApi (): FastifyInstance {
  const api = Fastify({ logger: false })
  // Like a real upstream, it takes whatever body a verified caller sends (the echo route shows it).
  api.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => { done(null, body) })
  api.setErrorHandler(async (error: { statusCode?: number, message: string }, _request, reply) => {
    const status = error.statusCode ?? 500
    return await reply.code(status).send({ result: 'error', description: status < 500 ? error.message : 'internal error', code: status })
  })
  api.get('/user/profile', async (request) => {
    const { userId } = identity(request)
    return ok({ miliaoNick: `user-${digest(userId).slice(0, 8)}`, unionId: digest(`union:${userId}`).slice(0, 32), miliaoIcon: `https://avatar.example.invalid/${digest(userId).slice(0, 16)}.png` })
  })
  api.get('/user/openidV2', async (request) => ok({ openid: identity(request).openId }))
  api.get('/user/phoneAndEmail', async (request) => {
    const { userId, scope } = identity(request)
    const number = parseInt(digest(`phone:${userId}`).slice(0, 8), 16) % 100_000_000
    return ok({
      ...(scope.includes('4') && { phone: `+86 138${String(number).padStart(8, '0')}` }),
      ...(scope.includes('6') && { email: `user-${digest(userId).slice(0, 8)}@example.invalid` })
    })
  })
  // What the upstream received, for the tests and the demo to show the gateway's work.
  api.all('/echo/*', async (request) => ok({ method: request.method, url: request.url, headers: request.headers }))
  return api
}
