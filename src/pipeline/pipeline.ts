/**
 * The request path, top to bottom. Every request sidegate receives takes
 * these steps, in this order; each is a named function below, over the one
 * request context (src/pipeline/context.ts):
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
 * admit step, so the three cannot drift apart (test/http/verdicts.test.ts). Any step
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
import type http from 'node:http'
import type { Duplex } from 'node:stream'
import { keyUsed, type Auditor } from '../observability/audit.js'
import type { Authenticators, Identity } from '../auth/index.js'
import { bodyMatches } from '../auth/digest.js'
import { BEFORE_BODY, keepBody } from '../body.js'
import type { Config } from '../config/index.js'
import type { RequestContext, StepContext } from './context.js'
import { E, GatewayError } from '../errors.js'
import { clientIp, forwardedOrigin, fromTrustedPeer, identityHeaders, injectIdentity, isHttps, isNavigation, isUpgradeOf, originalRequest, requestId, setForwarded as setForwardedHeaders, stripInjected, trustedProxies, upstreamCookie, type HeaderPolicy } from './headers.js'
import { parseCookies } from '../http/cookies.js'
import { pathOf } from '../http/query.js'
import { accessLogger, redactHeaders, redactUrl, type Logger } from '../observability/log.js'
import type { RequestObserver } from '../observability/metrics.js'
import { memberOrg, requestedOrg, resolveOrg as resolveOrgOf } from '../auth/org.js'
import type { IdentitySigner } from '../forward/identity.js'
import type { Forwarder } from '../forward/proxy.js'
import { rawErrorResponse, sendError } from '../respond.js'
import { DECISION_PATH } from '../routes/decision.js'
import { redirect } from '../routes/html.js'
import { loginLocation } from '../routes/login.js'
import { RateLimiter } from '../auth/rate-limit.js'
import type { Router } from '../routes/index.js'
import { PROFILE_PATH } from '../routes/users.js'
import type { Store } from '../store/types.js'
import type { Tracer } from '../observability/tracing.js'

export interface PipelineOptions {
  config: Config
  store: Store
  log: Logger
  auth: Authenticators
  router: Router
  policy: HeaderPolicy
  /** src/pipeline/origin.ts: a browser's request from another site */
  crossSite: (req: http.IncomingMessage) => boolean
  /** null without upstream.url: only sidegate's own routes */
  forwarder: Forwarder | null
  /** the gateway is draining: connections close after their answer, upgrades are refused */
  draining: () => boolean
  /** called once per finished request (Prometheus metrics) */
  metrics?: RequestObserver
  /** identity.jwt enabled: its signer (the token itself is set by injectIdentity) */
  identity?: IdentitySigner | null
  /** tracing on (src/observability/otel.ts); null or absent: off, and each step below checks only this */
  tracer?: Tracer | null
  /** the audit trail (src/observability/audit.ts): bearer tokens used and refused, an access key's first use */
  audit?: Auditor
}

export interface Pipeline {
  /** A request; `expectsContinue` when it came as `checkContinue` (`Expect: 100-continue`). */
  request (req: http.IncomingMessage, res: http.ServerResponse, expectsContinue?: boolean): void
  /** A WebSocket upgrade. */
  upgrade (req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void>
}

export function createPipeline (o: PipelineOptions): Pipeline {
  const { store, log, auth, router, policy, crossSite, forwarder } = o
  const tracer = o.tracer ?? null
  const orgHeader = o.config.names.orgHeader
  const orgHeaderLower = orgHeader.toLowerCase()
  const unknownOrg = o.config.org.unknown
  const access = accessLogger(log)
  const maxBody = o.config.auth.signature.max_body
  /** allow-lists as matchers, by their text (a key's list is fixed when it is created) */
  const allowLists = new Map<string, (ip: string) => boolean>()
  const allowList = (entries: string[]): ((ip: string) => boolean) => {
    const k = entries.join(',')
    let m = allowLists.get(k)
    if (m === undefined) {
      if (allowLists.size > 10_000) allowLists.clear()
      m = trustedProxies(entries)
      allowLists.set(k, m)
    }
    return m
  }
  const audit = o.audit === undefined || o.audit.off ? null : o.audit
  const limiter = o.config.rate_limit.enabled ? new RateLimiter(store, o.config.rate_limit, log, () => o.metrics?.rateLimitStoreError?.()) : null
  const loginRedirect = o.config.session.login_redirect

  // ── 1. receive ──────────────────────────────────────────────────────────

  function request (req: http.IncomingMessage, res: http.ServerResponse, expectsContinue = false): void {
    const url = req.url ?? '/'
    const ctx: Live = {
      req,
      res,
      path: pathOf(url),
      requestId: requestId(req),
      clientIp: clientIp(req, policy),
      https: isHttps(req, policy),
      expectsContinue,
      start: process.hrtime.bigint()
    }
    // X-Request-Id: set here for sidegate's own routes (handle), else written with the
    // head: the upstream's answer (src/forward/proxy.ts) or an error (fail), so Node writes it in one pass
    // tracing: the server span (an incoming traceparent is continued only from a trusted peer)
    const trace = tracer === null ? undefined : (ctx.trace = tracer.request(req, fromTrustedPeer(req, policy)))
    if (o.draining() || expectsContinue) res.setHeader('connection', 'close')
    // Query values and headers named like a credential are redacted (src/observability/log.ts), only when debug is on.
    if (log.isLevelEnabled('debug')) log.debug({ reqId: ctx.requestId, req: { method: req.method, url: redactUrl(url), headers: redactHeaders(req.headers) }, ip: ctx.clientIp }, 'request received')
    // one listener made once for all requests ('close' is emitted once): no closure per request
    ;(res as LiveRes)[CTX] = ctx
    res.on('close', onClose)
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node would answer plain text, we answer JSON.
    if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
      fail(ctx, E.badRequest('The Host header is required.'))
      return
    }
    if (trace === undefined) handle(ctx).catch((err) => fail(ctx, err))
    else trace.run(() => handle(ctx).catch((err) => fail(ctx, err)))
  }

  function onClose (this: LiveRes): void {
    done(this[CTX])
  }

  /** The answer is done (or the client left): metrics and the access log line. */
  function done (ctx: Live): void {
    const res = ctx.res
    // a client that left before any answer was sent: 499 (as nginx), not Node's default 200
    const status = res.headersSent ? res.statusCode : 499
    const ns = Number(process.hrtime.bigint() - ctx.start)
    const code = (res as ResWithCode).errorCode
    const authMethod = ctx.identity?.method
    o.metrics?.request(status, authMethod, code, ns / 1e9)
    ctx.trace?.end(status, ctx, code)
    if (!access.enabled) return
    // only these fields: the access line is not redacted (no credential may be added here)
    access.write({
      reqId: ctx.requestId,
      method: ctx.req.method,
      path: ctx.path,
      status,
      ms: ns / 1e6,
      userId: ctx.identity?.user.id,
      authMethod,
      code,
      ip: ctx.clientIp,
      aborted: res.writableFinished ? undefined : true,
      trace_id: ctx.trace?.traceId
    })
  }

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
          ctx.identity = await authenticate(ctx)
        } catch (err) {
          if (sentToLogin(ctx, err)) return
          throw err
        }
        checkKeyIp(ctx)
        await rateLimit(ctx)
        await checkDigest(ctx)
        if (route.auth === 'user+org') ctx.orgId = await resolveOrg(ctx)
        else if (route.auth === 'user+org-if-member') ctx.orgId = await orgIfMember(ctx)
      } else if (route.auth === 'session-page') ctx.identity = await browserSession(ctx)
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
      if (sentToLogin(ctx, err)) return
      throw err
    }
    // ── 5. to the upstream ──
    if (needsKeys(ctx)) await signingKeys(ctx)
    stripAndInject(ctx)
    setForwarded(ctx)
    forward(ctx)
  }

  // ── 3. authenticate ─────────────────────────────────────────────────────

  /**
   * The caller, or a GatewayError: 401, 403 (a session's CSRF token), 503 (the store).
   * `original`: a decision's original method and URI (decide).
   * Audited: a bearer token used or refused (an access key's first use: checkKeyIp).
   */
  function authenticate (ctx: StepContext, original?: { method: string, url: string }): Identity | Promise<Identity> {
    if (audit === null) return auth.resolve(ctx.req, original)
    let who: Identity | Promise<Identity>
    try {
      who = auth.resolve(ctx.req, original)
    } catch (err) {
      return refused(ctx, err)
    }
    return who instanceof Promise ? who.then((w) => audited(ctx, w), (err: unknown) => refused(ctx, err)) : audited(ctx, who)
  }

  function audited (ctx: StepContext, who: Identity): Identity {
    if (who.method === 'bearer') audit!.record({ event: 'token.used', ctx: { ...ctx, identity: who }, user: who.user, credential: bearerOf(ctx.req) })
    return who
  }

  function refused (ctx: StepContext, err: unknown): never {
    const token = bearerOf(ctx.req)
    if (token !== undefined && err instanceof GatewayError && err.status === 401) {
      audit!.record({ event: 'token.refused', ctx, authMethod: 'bearer', reason: err.code, credential: token })
    }
    throw err
  }

  /**
   * An access key with an allow-list (`--allow-ip`): the real client address
   * (trusted_proxies) must be in it, else 403 ip_not_allowed. Then, and only
   * then, the key counts as used (date_last_used, which auth.keys.disable_after
   * reads): a request refused here does not keep a key alive. No Redis round
   * trip on the request: the store writes at most once per key a minute, after.
   */
  function checkKeyIp (ctx: StepContext): void {
    const who = ctx.identity
    if (who?.keyId === undefined) return
    if (who.keyAllowIps !== undefined && !allowList(who.keyAllowIps)(ctx.clientIp)) throw E.ipNotAllowed()
    // the request's own context is the audit context (no object made per request)
    keyUsed(store, audit, ctx, who.user, who.keyId)
  }

  /**
   * rate_limit (src/auth/rate-limit.ts): one store call counts the request; the
   * RateLimit fields go on the answer, whatever it is; over the limit, 429.
   */
  async function rateLimit (ctx: RequestContext): Promise<void> {
    if (limiter === null) return
    const headers = await limiter.check(ctx.identity!)
    for (const name in headers) ctx.res.setHeader(name, headers[name])
  }

  /**
   * A signature that covers Digest or Content-Digest (src/auth/digest.ts):
   * the body is read whole, at most auth.signature.max_body bytes (413 above,
   * never buffered past that), checked (401 invalid_digest), and kept for the
   * route or the forwarder, which send these same bytes. The client that
   * waits for `100 Continue` gets it now: it is authenticated.
   */
  async function checkDigest (ctx: RequestContext): Promise<void> {
    const digests = ctx.identity?.digests
    if (digests === undefined) return
    proceed(ctx)
    const body = await keepBody(ctx.req, maxBody)
    if (!bodyMatches(body, digests)) throw E.invalidDigest()
  }

  /**
   * `session-page` routes: the browser's session when it has a valid one,
   * else undefined (the page decides); a request with an Authorization
   * header is not a browser's. Only a failing store is an error.
   */
  async function browserSession (ctx: StepContext): Promise<Identity | undefined> {
    if (ctx.req.headers.authorization !== undefined) return undefined
    try {
      const who = await auth.authenticate(ctx.req)
      return who.method === 'session' ? who : undefined
    } catch (err) {
      if (err instanceof GatewayError && err.status === 401) return undefined
      throw err
    }
  }

  /**
   * session.login_redirect: the login page, with `url` as where to come back
   * to, in place of a 401 for a browser's navigation (GET or HEAD: another
   * method's body could not be sent again after signing in) that carried no
   * credential, or one session cookie that is no longer valid (expired, logged
   * out: how a browser's session ends). Else undefined: any other refused
   * credential, and a session cookie sent twice with different values, keep
   * their 401 (signing in would not change them).
   */
  function loginFor (req: http.IncomingMessage, err: unknown, method: string, url: string, origin = ''): string | undefined {
    if (!loginRedirect || !(err instanceof GatewayError)) return undefined
    if (err.code !== 'not_authenticated' && err.code !== 'invalid_session') return undefined
    if ((method !== 'GET' && method !== 'HEAD') || !isNavigation(req)) return undefined
    if (err.code === 'invalid_session' && typeof auth.session.cookieValue({ cookies: parseCookies(req.headers.cookie) }) !== 'string') return undefined
    return loginLocation(url, origin)
  }

  /** A refusal answered with a redirect to the login page instead (loginFor): whether it was. */
  function sentToLogin (ctx: RequestContext, err: unknown): boolean {
    const login = loginFor(ctx.req, err, ctx.req.method ?? '', ctx.req.url ?? '/')
    if (login === undefined) return false
    // 303: "see the login page" (a GET whatever came), never stored
    redirect(ctx.res, 303, login, { 'x-request-id': ctx.requestId })
    return true
  }

  // ── 4. resolveOrg ───────────────────────────────────────────────────────

  /**
   * The organization the authenticated caller acts in, or 400 invalid_org /
   * 403 org_forbidden / 404 org_not_found. `own`: the user's default org,
   * whatever the request asked for; `url`: whose `?oid=` counts (a decision's
   * original request).
   */
  function resolveOrg (ctx: StepContext, o: { own?: boolean, url?: string } = {}): Promise<string> {
    return resolveOrgOf(store, ctx.identity!.user, o.own === true ? undefined : requestedOrg(ctx.req, orgHeaderLower, orgHeader, o.url), unknownOrg)
  }

  /** resolveOrg, but undefined where it would be 403 or 404 (a malformed org is still 400). */
  async function orgIfMember (ctx: StepContext, url?: string): Promise<string | undefined> {
    try {
      return await resolveOrg(ctx, { url })
    } catch (err) {
      if (err instanceof GatewayError && (err.status === 403 || err.status === 404)) return undefined
      throw err
    }
  }

  /**
   * The org of an upstream path: the profile needs no membership (as in JumpServer), the user's own org is injected instead.
   * At once (no promise) when the user is a member of the org asked for, the common case.
   */
  function upstreamOrg (ctx: StepContext, path: string, url?: string): string | Promise<string> {
    if (path !== PROFILE_PATH) {
      const member = memberOrg(ctx.identity!.user, requestedOrg(ctx.req, orgHeaderLower, orgHeader, url))
      if (member !== undefined) return member
      return resolveOrg(ctx, { url })
    }
    return profileOrg(ctx, url)
  }

  async function profileOrg (ctx: StepContext, url?: string): Promise<string> {
    return await orgIfMember(ctx, url) ?? await resolveOrg(ctx, { own: true })
  }

  // ── 3., 4. for a forward-auth decision ──────────────────────────────────

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
      const login = loginFor(ctx.req, err, original.method, original.url, nginx ? '' : forwardedOrigin(ctx.req, policy))
      if (login === undefined) throw err
      if (nginx) {
        ctx.res.setHeader(policy.loginHeader, login)
        throw err
      }
      redirect(ctx.res, 303, login, { 'x-request-id': ctx.requestId })
      return false
    }
    if (needsKeys(ctx)) await signingKeys(ctx)
    ctx.decision = ctx.identity === undefined ? {} : identityHeadersOf(ctx)
    ctx.decision.cookie = upstreamCookie(ctx.req, policy)
    return true
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
    const who = authenticate(ctx, original)
    ctx.identity = who instanceof Promise ? await who : who
    checkKeyIp(ctx)
    if (limiter !== null) {
      if ('res' in ctx) await rateLimit(ctx)
      // an upgrade is counted like any request; the RateLimit fields cannot go on the upstream's 101
      else await limiter.check(ctx.identity)
    }
    if (ctx.identity.digests !== undefined) {
      // a forwarded request's body is read and checked; a handshake has no body, so a signed
      // digest must be the empty body's; a decision's body stays at the proxy in front, so a
      // signed digest cannot be checked there and is not accepted unchecked
      if (body === 'read') await checkDigest(ctx as RequestContext)
      else if (body === 'upgrade') {
        if (!bodyMatches(Buffer.alloc(0), ctx.identity.digests)) throw E.invalidDigest()
      } else throw E.badRequest('A signature that covers Digest or Content-Digest cannot be decided here (the body stays at the proxy): send it through sidegate\'s proxy mode.')
    }
    const org = upstreamOrg(ctx, path, original?.url)
    ctx.orgId = typeof org === 'string' ? org : await org
    // Browsers send cookies with a cross-origin WebSocket handshake and no
    // CORS applies; SameSite does not help against a sibling sub-domain.
    // Header credentials cannot be sent by another site's page.
    if (body === 'upgrade' && ctx.identity.method === 'session' && crossSite(ctx.req)) throw E.crossSite()
  }

  // ── 5. to the upstream ──────────────────────────────────────────────────

  /** identity.jwt: the signing keys read recently enough to sign (a store read only at start or when stale; 503 when it fails). */
  async function signingKeys (ctx: StepContext): Promise<void> {
    if (needsKeys(ctx)) await o.identity!.ready()
  }

  /** signingKeys has to read the store first (checked before awaiting it: most requests need not) */
  function needsKeys (ctx: StepContext): boolean {
    return ctx.identity !== undefined && o.identity != null && !o.identity.fresh
  }

  /**
   * The identity headers of the authenticated caller in its resolved org
   * (with the signed identity token when identity.jwt is on): what a
   * forwarded request carries and what a decision answers with.
   */
  function identityHeadersOf (ctx: StepContext): Record<string, string> {
    return identityHeaders(policy, ctx.identity!, ctx.orgId!, ctx.requestId)
  }

  /** The upstream sees exactly the resolved identity (none on a public path) and none of sidegate's credentials. */
  function stripAndInject (ctx: StepContext): void {
    if (ctx.identity === undefined) stripInjected(ctx.req, policy)
    else injectIdentity(ctx.req, policy, identityHeadersOf(ctx), ctx.orgId!)
  }

  /** X-Forwarded-For, -Proto, -Host (a trusted proxy's kept) and X-Request-Id. */
  function setForwarded (ctx: StepContext): void {
    setForwardedHeaders(ctx.req, policy, ctx.requestId)
  }

  /** The request and its body to the upstream, its answer back; 502/504 when it fails. */
  function forward (ctx: RequestContext): void {
    proceed(ctx)
    // tracing: the upstream call's span, whose traceparent the upstream gets
    forwarder!.web(ctx.req, ctx.res, (err) => fail(ctx, err), ctx.trace?.upstream(ctx.req))
  }

  /**
   * `Expect: 100-continue`: the client waits for `100 Continue` before it sends
   * the body. Sent once the request is routed and authenticated: before it is
   * forwarded, or when one of sidegate's routes starts reading the body (the
   * token endpoint's and /login's body is the credential), so a refused client
   * never uploads its body; Node would send it at once. Until then the answer
   * carries `Connection: close` (set in request): answered without 100, the
   * client may or may not send the body, so the connection cannot be reused
   * (RFC 9110 10.1.1).
   */
  function proceed (ctx: RequestContext): void {
    if (ctx.expectsContinue !== true) return
    ctx.expectsContinue = false
    if (ctx.res.headersSent || ctx.res.destroyed) return
    if (!o.draining()) ctx.res.removeHeader('connection')
    ctx.res.writeContinue()
  }

  /** Any error of any step: its JSON answer; logged when it is a bug (or a 5xx). */
  function fail (ctx: RequestContext, err: unknown): void {
    const e = sendError(ctx.res, err, ctx.requestId)
    if (!(err instanceof GatewayError)) log.error({ err, reqId: ctx.requestId }, 'unhandled error')
    else if (e.status >= 500) log.warn({ reqId: ctx.requestId, code: e.code, cause: (err as { cause?: Error }).cause?.message }, e.detail)
    ;(ctx.res as ResWithCode).errorCode = e.code
  }

  // ── WebSocket upgrades: the same steps, to the upstream only ────────────

  async function upgrade (req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const trace = tracer?.request(req, fromTrustedPeer(req, policy))
    if (trace === undefined) return await upgradeSteps(req, socket, head)
    return await trace.run(async () => await upgradeSteps(req, socket, head, trace))
  }

  async function upgradeSteps (req: http.IncomingMessage, socket: Duplex, head: Buffer, trace?: StepContext['trace']): Promise<void> {
    const start = process.hrtime.bigint()
    socket.on('error', () => socket.destroy())
    const ctx: StepContext = { req, path: pathOf(req.url ?? '/'), requestId: requestId(req), clientIp: clientIp(req, policy), https: isHttps(req, policy), trace }
    try {
      if (forwarder === null) throw E.notFound()
      trace?.route('upstream')
      if (o.draining()) throw E.shuttingDown()
      await admit(ctx, ctx.path, 'upgrade')
      await signingKeys(ctx)
      stripAndInject(ctx)
      setForwarded(ctx)
      const call = trace?.upstream(req)
      // counted like any request: 101 once the upstream switched protocols, else the error
      forwarder.ws(req, socket, head, (err) => rejectUpgrade(socket, err, start, ctx), () => {
        o.metrics?.request(101, ctx.identity?.method, undefined, secondsSince(start))
        if (call !== undefined) { call.end(101); trace!.end(101, ctx, undefined) }
      })
      log.info({ reqId: ctx.requestId, path: ctx.path, userId: ctx.identity?.user.id, authMethod: ctx.identity?.method }, 'websocket')
    } catch (err) {
      rejectUpgrade(socket, err, start, ctx)
    }
  }

  function rejectUpgrade (socket: Duplex, err: unknown, start: bigint, ctx: StepContext): void {
    const e = err instanceof GatewayError ? err : E.internal()
    o.metrics?.request(e.status, ctx.identity?.method, e.code, secondsSince(start))
    ctx.trace?.end(e.status, ctx, e.code)
    socket.end(rawErrorResponse(e))
  }

  return { request, upgrade }
}

/** The token of an `Authorization: Bearer …` header (as sent, for the audit's ref), else undefined. */
function bearerOf (req: http.IncomingMessage): string | undefined {
  const h = req.headers.authorization
  return typeof h === 'string' && /^bearer(?:\s|$)/i.test(h) ? h.slice(6).trim() : undefined
}

function secondsSince (start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9
}

/** A request's context while it is answered: when it started (process.hrtime.bigint). */
interface Live extends RequestContext { start: bigint }
const CTX = Symbol('sidegate.context')
type LiveRes = http.ServerResponse & { [CTX]: Live }

/** The error code a response was answered with, for the access log and the metrics. */
export type ResWithCode = http.ServerResponse & { errorCode?: string }
type ContinueHook = http.IncomingMessage & { [BEFORE_BODY]?: () => void }
