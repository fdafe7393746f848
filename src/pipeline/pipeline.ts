/**
 * The request path, top to bottom. Every request sidegate receives takes
 * these steps, in this order; each is a named function in this folder
 * (receive.ts, authenticate.ts, steps.ts, org.ts, decide.ts, upgrade.ts),
 * over the one request context (src/pipeline/context.ts):
 *
 *   receive ─▶ route ─┬─ own route ─▶ authenticate ─▶ resolveOrg ─▶ the route's handler
 *                     └─ upstream ──▶ authenticate ─▶ resolveOrg ─▶ stripAndInject ─▶ setForwarded ─▶ forward
 *
 * 1. receive: the context (path, request id, client IP, HTTPS); the access log
 *    line and the metrics once the answer is done; a request without Host is 400.
 * 2. route: one of sidegate's own routes (src/routes/index.ts; a known path
 *    with another method is 405), else the upstream (404 without one).
 * 3. authenticate: the first authenticator that claims the request decides
 *    (src/auth/): an own route as its `auth` mode says ('none', 'user',
 *    'user+org', 'user+org-if-member', 'session-page'); an upstream path always, unless it is in
 *    upstream.public_paths. A browser's navigation refused for want of a
 *    credential is sent to the login page instead (loginFor, session.login_redirect).
 * 4. resolveOrg: `?oid=`, the org header or the user's default (src/auth/org.ts),
 *    for 'user+org' routes and every authenticated upstream path (the profile
 *    needs no membership: 'user+org-if-member', and the user's own org upstream).
 * 5. An own route's handler answers. For the upstream: stripAndInject (the
 *    client's copies of the identity headers and sidegate's own credentials
 *    go, the resolved identity is set, with identity.jwt also as a signed
 *    token: src/pipeline/headers.ts, src/forward/identity.ts), setForwarded
 *    (X-Forwarded-*, X-Request-Id), forward (src/forward/proxy.ts).
 *
 * A WebSocket upgrade takes the same steps to the upstream (upgrade below),
 * forwarded by forwarder.ws. The forward-auth decision endpoint
 * (/_sidegate/auth, route auth mode 'decision', trusted proxies only) takes
 * steps 3 and 4 over the original request the proxy in front describes
 * (decide below) and answers with the identity headers instead of
 * forwarding: the same headers (identityHeadersOf) a forwarded request gets.
 * Forwarded, upgraded or decided, a request for the upstream passes the one
 * admit step, so the three cannot drift apart (test/verdicts.test.ts). Any step
 * may throw a GatewayError (src/errors.ts): `fail` answers it as JSON,
 * `rejectUpgrade` on the socket.
 *
 * The steps are small functions made once per gateway: a request costs no
 * closure or promise beyond what the work needs. A live reload (src/app/reload.ts)
 * makes them anew from the new config and the server swaps one reference
 * (src/pipeline/server.ts apply): what they derive from the config is fixed per pipeline.
 *
 * Tracing (src/observability/tracing.ts, on only with an endpoint): receive starts the
 * request's server span and runs the steps in its context, route names it,
 * forward starts the upstream call's span, done ends it and logs its trace id.
 * Off, each of these is a null check.
 *
 * The audit trail (src/observability/audit.ts) hears from authenticate (a bearer token
 * used or refused) and checkKeyIp (an access key's first use, known from the
 * last-use write the request makes anyway, at most once a minute per key). Nothing else on
 * this path writes to it, and it never waits for Redis.
 */
import type { RequestContext, StepContext } from './context.js'
import { bodyMatches } from '../auth/digest.js'
import { BEFORE_BODY } from '../body.js'
import { E } from '../errors.js'
import type { PipelineOptions, Pipeline } from './options.js'
import { createReceive } from './receive.js'
import { authenticateSteps } from './authenticate.js'
import { orgSteps } from './org.js'
import { steps } from './steps.js'
import { decideStep } from './decide.js'
import { upgradeEntry } from './upgrade.js'

export type { PipelineOptions, Pipeline } from './options.js'
export type { ResWithCode } from './receive.js'

export function createPipeline (o: PipelineOptions): Pipeline {
  const { router, crossSite, forwarder } = o
  const { request, fail, proceed } = createReceive(o, handle)
  const a = authenticateSteps(o)
  const org = orgSteps(o)
  const s = steps(o, { proceed, fail })
  const decide = decideStep(o, admit, a, s)
  const upgrade = upgradeEntry(o, admit, s)

  /** Steps 2 to 5 of a plain request. */
  async function handle (ctx: RequestContext): Promise<void> {
    // ── 2. route ──
    const route = router.find(ctx.path, ctx.req.method ?? '')
    if (route !== null) {
      ctx.trace?.route(route.path)
      ctx.res.setHeader('x-request-id', ctx.requestId)
      // ── 3., 4. as the route's auth mode says ──
      if (route.auth === 'user' || route.auth === 'user+org' || route.auth === 'user+org-if-member') {
        try {
          ctx.identity = await a.authenticate(ctx)
        } catch (err) {
          if (a.sentToLogin(ctx, err)) return
          throw err
        }
        s.checkKeyIp(ctx)
        await s.rateLimit(ctx)
        await s.checkDigest(ctx)
        if (route.auth === 'user+org') ctx.orgId = await org.resolveOrg(ctx)
        else if (route.auth === 'user+org-if-member') ctx.orgId = await org.orgIfMember(ctx)
      } else if (route.auth === 'session-page') ctx.identity = await a.browserSession(ctx)
      else if (route.auth === 'decision' && !(await decide(ctx))) return
      // 100 Continue when the route starts reading the body (readBody), after its own checks
      if (ctx.expectsContinue === true) (ctx.req as ContinueHook)[BEFORE_BODY] = () => proceed(ctx)
      // ── 5. the handler answers ──
      await route.handle(ctx)
      return
    }
    if (forwarder === null) throw E.notFound()
    ctx.trace?.route('upstream')
    // ── 3., 4. a credential and an org, except on upstream.public_paths ──
    try {
      await admit(ctx, ctx.path, 'read')
    } catch (err) {
      if (a.sentToLogin(ctx, err)) return
      throw err
    }
    // ── 5. to the upstream ──
    if (s.needsKeys(ctx)) await s.signingKeys(ctx)
    s.stripAndInject(ctx)
    s.setForwarded(ctx)
    s.forward(ctx)
  }

  /**
   * Steps 3 and 4 of a request for the upstream, the same whether sidegate
   * forwards it or decides it for the proxy in front: on a public path none;
   * else authenticate (over `original` when deciding), the access key's
   * allow-list, the rate limit, a signed body digest, the org, and for a
   * WebSocket handshake the cross-site check. `body`: 'read' (a forwarded
   * request: read and checked), 'upgrade' (a handshake: the empty body),
   * 'elsewhere' (a decision: the body stays at the proxy).
   */
  async function admit (ctx: RequestContext | StepContext, path: string, body: 'read' | 'upgrade' | 'elsewhere', original?: { method: string, url: string }): Promise<void> {
    if (router.isPublicUpstream(path)) return
    // a step that can answer from memory returns its value, else a promise: only a promise is awaited
    const who = a.authenticate(ctx, original)
    ctx.identity = who instanceof Promise ? await who : who
    s.checkKeyIp(ctx)
    if (s.limiter !== null) {
      if ('res' in ctx) await s.rateLimit(ctx)
      // an upgrade is counted like any request; the RateLimit fields cannot go on the upstream's 101
      else await s.limiter.check(ctx.identity)
    }
    if (ctx.identity.digests !== undefined) {
      // a forwarded request's body is read and checked; a handshake has no body, so a signed
      // digest must be the empty body's; a decision's body stays at the proxy in front, so a
      // signed digest cannot be checked there and is not accepted unchecked
      if (body === 'read') await s.checkDigest(ctx as RequestContext)
      else if (body === 'upgrade') {
        if (!bodyMatches(Buffer.alloc(0), ctx.identity.digests)) throw E.invalidDigest()
      } else throw E.badRequest('A signature that covers Digest or Content-Digest cannot be decided here (the body stays at the proxy): send it through sidegate\'s proxy mode.')
    }
    const orgId = org.upstreamOrg(ctx, path, original?.url)
    ctx.orgId = typeof orgId === 'string' ? orgId : await orgId
    // Browsers send cookies with a cross-origin WebSocket handshake and no
    // CORS applies; SameSite does not help against a sibling sub-domain.
    // Header credentials cannot be sent by another site's page.
    if (body === 'upgrade' && ctx.identity.method === 'session' && crossSite(ctx.req)) throw E.crossSite()
  }

  return { request, upgrade }
}

type ContinueHook = RequestContext['req'] & { [BEFORE_BODY]?: () => void }
