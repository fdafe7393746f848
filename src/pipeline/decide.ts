/**
 * The forward-auth decision (/_sidegate/auth, route auth mode 'decision'):
 * the original request the proxy in front describes, decided as proxy mode
 * decides the same request; answered with the identity headers instead of
 * being forwarded (src/routes/decision.ts).
 */
import type { RequestContext } from './context.js'
import { E } from '../errors.js'
import { forwardedOrigin, fromTrustedPeer, isUpgradeOf, originalRequest, upstreamCookie } from './headers.js'
import { pathOf } from '../http/query.js'
import { DECISION_PATH } from '../routes/decision.js'
import { redirect } from '../routes/html.js'
import type { PipelineOptions } from './options.js'
import type { authenticateSteps } from './authenticate.js'
import type { steps } from './steps.js'

type Admit = (ctx: RequestContext, path: string, body: 'read' | 'upgrade' | 'elsewhere', original?: { method: string, url: string }) => Promise<void>

export function decideStep (o: PipelineOptions, admit: Admit, a: ReturnType<typeof authenticateSteps>, s: ReturnType<typeof steps>) {
  const { log, policy } = o

  /** Peers already told they are not trusted proxies (bounded): one warning each. */
  const untrustedWarned = new Set<string>()

  /**
   * The request the proxy in front received (its method and URI from
   * X-Forwarded-Method and -Uri or X-Original-Method and -URI, else this
   * request's own; src/pipeline/headers.ts originalRequest), decided as proxy mode
   * decides the same request (admit): on a public path (upstream.public_paths)
   * no credential is looked at; a signature is checked over its method and URI.
   * Its other headers (credentials, the org header, Origin, Sec-Fetch-*,
   * Upgrade) are on this request as the proxy copied them. Only a peer in
   * server.trusted_proxies may ask: anyone else could describe another request
   * than its own, or fetch the signed identity of its own credential.
   * ctx.decision: the identity headers and the Cookie header for the upstream.
   * A browser's navigation sent to sign in (loginFor): nginx's auth_request
   * (X-Original-URI) turns any answer but 2xx, 401 and 403 into 500, so its
   * 401 names the login page in X-<abbrev>-Login for the proxy's error_page;
   * Caddy, Traefik and Envoy pass a refusal on as it is, so theirs is the
   * redirect itself (absolute from the proxy's X-Forwarded-Host: Traefik
   * resolves a relative one against sidegate's address). False: answered.
   */
  async function decide (ctx: RequestContext): Promise<boolean> {
    if (!fromTrustedPeer(ctx.req, policy)) {
      const peer = ctx.req.socket.remoteAddress ?? ''
      if (!untrustedWarned.has(peer)) {
        if (untrustedWarned.size >= 1000) untrustedWarned.clear()
        untrustedWarned.add(peer)
        log.warn({ peer }, 'a forward-auth decision asked by a peer that is not a trusted proxy: refused (403 untrusted_proxy); list the proxy in server.trusted_proxies')
      }
      throw E.untrustedProxy()
    }
    const original = originalRequest(ctx.req, policy, DECISION_PATH)
    const path = pathOf(original.url)
    try {
      await admit(ctx, path, isUpgradeOf(ctx.req) ? 'upgrade' : 'elsewhere', original)
    } catch (err) {
      const h = ctx.req.headers
      const nginx = h['x-forwarded-uri'] === undefined && h['x-original-uri'] !== undefined
      const login = a.loginFor(ctx.req, err, original.method, original.url, nginx ? '' : forwardedOrigin(ctx.req, policy))
      if (login === undefined) throw err
      if (nginx) {
        ctx.res.setHeader(policy.loginHeader, login)
        throw err
      }
      redirect(ctx.res, 303, login, { 'x-request-id': ctx.requestId })
      return false
    }
    if (s.needsKeys(ctx)) await s.signingKeys(ctx)
    ctx.decision = ctx.identity === undefined ? {} : s.identityHeadersOf(ctx)
    ctx.decision.cookie = upstreamCookie(ctx.req, policy)
    return true
  }

  return decide
}
