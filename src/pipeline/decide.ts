/**
 * The forward-auth decision's own steps (/_sidegate/auth, route auth mode
 * 'decision'; src/pipeline/chains.ts): only a trusted proxy may ask, about
 * the original request it describes, which is then admitted as proxy mode
 * admits the same request; answered with the identity headers instead of
 * being forwarded (src/routes/decision.ts).
 */
import type { Impl } from './chains.js'
import type { Live } from './context.js'
import { E } from '../errors.js'
import { fromTrustedPeer, identityHeaders, originalRequest, upstreamCookie } from './headers.js'
import { pathOf } from '../http/query.js'
import { unmapIp } from '../http/address.js'
import { DECISION_PATH } from '../routes/decision.js'
import type { PipelineOptions } from './options.js'

export function decisionSteps (o: PipelineOptions) {
  const { log, policy } = o

  /** Peers already told they are not trusted proxies (bounded): one warning each. */
  const untrustedWarned = new Set<string>()

  /**
   * Only a peer in server.trusted_proxies may ask: anyone else could describe
   * another request than its own, or fetch the signed identity of its own credential.
   */
  function trustedPeer (ctx: Live): void {
    if (fromTrustedPeer(ctx.req, policy)) return
    const peer = unmapIp(ctx.req.socket.remoteAddress ?? '')
    if (!untrustedWarned.has(peer)) {
      if (untrustedWarned.size >= 1000) untrustedWarned.clear()
      untrustedWarned.add(peer)
      log.warn({ peer }, 'a forward-auth decision asked by a peer that is not a trusted proxy: refused (403 untrusted_proxy); list the proxy in server.trusted_proxies')
    }
    throw E.untrustedProxy()
  }

  /**
   * The request the proxy in front received: its method and URI from
   * X-Forwarded-Method and -Uri or X-Original-Method and -URI, else this
   * request's own (src/pipeline/headers.ts originalRequest). Its other headers
   * (credentials, the org header, Origin, Sec-Fetch-*, Upgrade) are on this
   * request as the proxy copied them. What follows decides it as proxy mode
   * decides the same request: on its public path no credential is looked at,
   * a signature is checked over its method and URI, `?oid=` is its own.
   */
  function original (ctx: Live): void {
    const original = originalRequest(ctx.req, policy, DECISION_PATH)
    ctx.original = original
    ctx.target = pathOf(original.url)
  }

  /**
   * ctx.decision: the answer's head as one list (Node writes a head given whole
   * in one pass): no-store, X-Request-Id, the identity headers a forwarded
   * request would carry, and the Cookie header for the upstream.
   */
  function decision (ctx: Live): void {
    const head = ['cache-control', 'no-store', 'content-length', '0', 'x-request-id', ctx.requestId]
    if (ctx.identity !== undefined) identityHeaders(policy, ctx.identity, ctx.orgId!, ctx.requestId, head)
    head.push('cookie', upstreamCookie(ctx.req, policy))
    ctx.decision = head
  }

  return { trustedPeer, original, decision } satisfies Partial<Impl>
}
