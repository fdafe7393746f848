/**
 * /healthz: the process answers. /readyz: the store answers, `ready` holds and
 * we are not draining; `warnings` names settings that weaken security
 * (signature_freshness_off, signature_sha1_accepted), never their values.
 */
import { E, GatewayError } from '../errors.js'
import { sendJson } from '../respond.js'
import type { Store } from '../store/types.js'
import { json } from './spec.js'
import type { Route } from './types.js'

export function healthRoutes (
  store: Store, isDraining: () => boolean, ready?: () => Promise<void>, warnings: readonly string[] = []
): Route[] {
  const readyBody = warnings.length === 0 ? { status: 'ready' } : { status: 'ready', warnings }
  return [{
    method: 'GET',
    path: '/healthz',
    auth: 'none',
    docs: { tags: ['Health'], operationId: 'healthz', summary: 'Liveness', responses: { 200: { description: 'The process answers.', content: json({ type: 'object', properties: { status: { const: 'ok' } } }) } } },
    handler (ctx) { sendJson(ctx.res, 200, { status: 'ok' }) }
  }, {
    method: 'GET',
    path: '/readyz',
    auth: 'none',
    docs: {
      tags: ['Health'],
      operationId: 'readyz',
      summary: 'Readiness: the store answers and the gateway is not draining',
      responses: { 200: { description: 'Ready. `warnings` (only when there are any) names settings that weaken security, as the start-up log does.', content: json({ type: 'object', required: ['status'], properties: { status: { const: 'ready' }, warnings: { type: 'array', items: { enum: ['signature_freshness_off', 'signature_sha1_accepted'] } } } }) } },
      errors: { 503: 'Unavailable' }
    },
    async handler (ctx) {
      if (isDraining()) throw E.shuttingDown()
      await store.ping()
      if (ready !== undefined) {
        await ready().catch((err: unknown) => {
          throw err instanceof GatewayError && err.status === 503 ? err : E.storeUnavailable()
        })
      }
      sendJson(ctx.res, 200, readyBody)
    }
  }]
}
