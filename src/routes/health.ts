/**
 * /healthz: the process answers. /readyz: the store answers, `ready` holds and
 * we are not draining; `warnings` names settings that weaken security
 * (signature_freshness_off, signature_sha1_accepted), never their values;
 * `issuers` the state of each trusted issuer's keys (src/auth/jwks.ts).
 */
import { E, GatewayError } from '../errors.js'
import { Type as T } from '@sinclair/typebox'
import type { Store } from '../store/types.js'
import { route, type Route } from './types.js'
import { issuerStatuses } from '../auth/jwks.js'

const LIVE = T.Object({ status: T.Literal('ok') })
const READY = T.Object({
  status: T.Literal('ready'),
  warnings: T.Optional(T.Array(T.Union([T.Literal('signature_freshness_off'), T.Literal('signature_sha1_accepted')]))),
  issuers: T.Optional(T.Array(T.Object({
    id: T.String(),
    state: T.Union([T.Literal('starting'), T.Literal('ready'), T.Literal('unavailable')]),
    keys: T.Integer(),
    error: T.Optional(T.String())
  }), { description: 'auth.trusted_issuers: each issuer\'s keys. unavailable: none could be read yet (its tokens get 503 issuer_unavailable; retried with backoff); the gateway is ready for every other credential' }))
})

export function healthRoutes (
  store: Store, isDraining: () => boolean, ready?: () => Promise<void>, warnings: readonly string[] = []
): Route[] {
  const readyBody = (warnings.length === 0 ? { status: 'ready' } : { status: 'ready', warnings }) as typeof READY.static
  return [route({
    method: 'GET',
    path: '/healthz',
    auth: 'none',
    docs: { tags: ['Health'], operationId: 'healthz', summary: 'Liveness', responses: {} },
    answers: { 200: { description: 'The process answers.', schema: LIVE } },
    handler (ctx, { reply }) { reply(200, { status: 'ok' }) }
  }), route({
    method: 'GET',
    path: '/readyz',
    auth: 'none',
    docs: {
      tags: ['Health'],
      operationId: 'readyz',
      summary: 'Readiness: the store answers and the gateway is not draining',
      responses: {},
      errors: { 503: 'Unavailable' }
    },
    answers: {
      200: {
        description: 'Ready. `warnings` (only when there are any) names settings that weaken security, as the start-up log does.',
        schema: READY
      }
    },
    async handler (ctx, { reply }) {
      if (isDraining()) throw E.shuttingDown()
      await store.ping()
      if (ready !== undefined) {
        await ready().catch((err: unknown) => {
          throw err instanceof GatewayError && err.status === 503 ? err : E.storeUnavailable()
        })
      }
      const issuers = issuerStatuses()
      reply(200, issuers.length === 0 ? readyBody : { ...readyBody, issuers })
    }
  })]
}
