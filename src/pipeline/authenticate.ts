/**
 * The authenticate steps (src/pipeline/chains.ts STEPS.authenticate): the first
 * authenticator that claims the request decides (src/auth/). The audit trail
 * hears of a bearer token used or refused here. A browser's navigation refused
 * for want of a credential is sent to the login page instead (loginFor,
 * session.login_redirect).
 */
import type http from 'node:http'
import type { Identity } from '../auth/index.js'
import type { Impl } from './chains.js'
import type { Flow, Live, StepContext } from './context.js'
import { GatewayError, mapResult, type Result } from '../errors.js'
import { forwardedOrigin, isNavigation } from './headers.js'
import { parseCookies } from '../http/cookies.js'
import { redirect } from '../routes/html.js'
import { loginLocation } from '../routes/next.js'
import { ownOrigin } from './origin.js'
import { auditOf, type PipelineOptions } from './options.js'
import type { AccessGate } from './access.js'
import { jwtShaped } from '../auth/trusted-token.js'

export function authenticateSteps (o: PipelineOptions, access: AccessGate | null) {
  const { auth, router, policy, sso } = o
  const assumeHttps = o.config.session.cookie_secure
  const audit = auditOf(o)
  const loginRedirect = o.config.session.login_redirect
  const trustedIssuers = o.config.auth.trusted_issuers.length > 0

  /**
   * The caller, or the refusal (401, 403 a session's CSRF token, 503 the store) returned:
   * at once when decided from memory (auth.resolve), else as a promise; never thrown.
   * `original`: a decision's original method and URI (the `original` step).
   * Audited: a bearer token used or refused (an access key's first use: keyIp, steps.ts).
   */
  function authenticate (ctx: StepContext, original?: { method: string, url: string }): Result<Identity> {
    const who = auth.resolve(ctx.req, original)
    return audit === null ? who : mapResult(who, audited, ctx, refused)
  }

  function audited (who: Identity, ctx: StepContext): Identity {
    if (who.method === 'trusted_token') {
      // once per token (its first sight); never the token itself
      if (who.firstSight) audit!.record({ event: 'token.accepted', ctx: { ...ctx, identity: who }, user: who.user, source: `issuer:${who.issuer}` })
    } else if (who.method === 'bearer') {
      audit!.record({
        event: 'token.used',
        ctx: { ...ctx, identity: who },
        user: who.user,
        credential: bearerOf(ctx.req)
      })
    }
    return who
  }

  /** Audits a refused bearer token; the refusal itself is handed back. */
  function refused (err: GatewayError, ctx: StepContext): GatewayError {
    const token = bearerOf(ctx.req)
    if (token !== undefined && err.status === 401) {
      const method = trustedIssuers && jwtShaped(token) ? 'trusted_token' : 'bearer'
      audit!.record({ event: 'token.refused', ctx, authMethod: method, reason: err.code, credential: token })
    }
    return err
  }

  /**
   * `session-page` routes: the browser's session when it has a valid one,
   * else none (the page decides); a request with an Authorization header is
   * not a browser's (not asked here). Only a failing store is an error.
   */
  function browserSession (ctx: Live): Result<void> {
    return mapResult(auth.resolve(ctx.req), sessionOnly, ctx, refusedBeyond401)
  }

  /**
   * session.login_redirect: the login page, with `url` as where to come back
   * to, in place of a 401 for a browser's navigation (GET or HEAD: another
   * method's body could not be sent again after signing in) that carried no
   * credential, or one session cookie that is no longer valid (expired, logged
   * out: how a browser's session ends). Else undefined: any other refused
   * credential, and a session cookie sent twice with different values, keep
   * their 401 (signing in would not change them). Only authenticate refuses
   * with these codes, so only its refusals are looked at. Under a cookie
   * domain with its portal elsewhere (session.cookies) the page is the
   * portal's, `origin` making the original URL absolute; `relative` is the
   * prefix of a page on this host ('' or the proxy's origin).
   */
  function loginFor (
    req: http.IncomingMessage, err: GatewayError, method: string, url: string, origin: () => string, relative = ''
  ): string | undefined {
    if (!loginRedirect) return undefined
    if (err.code !== 'not_authenticated' && err.code !== 'invalid_session') return undefined
    if ((method !== 'GET' && method !== 'HEAD') || !isNavigation(req)) return undefined
    if (err.code === 'invalid_session' &&
      typeof auth.session.cookieValue({ cookies: parseCookies(req.headers.cookie) }) !== 'string') return undefined
    return sso.domains.length === 0 ? loginLocation(url, relative) : sso.login(req, url, origin(), relative)
  }

  /** A refusal answered with a redirect to the login page instead (loginFor), else handed back. */
  function toLogin (err: GatewayError, ctx: Live): GatewayError | undefined {
    const own = (): string => ownOrigin(ctx.req, policy, assumeHttps) ?? ''
    const login = loginFor(ctx.req, err, ctx.req.method ?? '', ctx.req.url ?? '/', own)
    if (login === undefined) return err
    // 303: "see the login page" (a GET whatever came), never stored
    redirect(ctx.res, 303, login, { 'x-request-id': ctx.requestId })
    ctx.answered = true
    return undefined
  }

  /**
   * A decision's refusal sent to sign in, as the proxy family that asked takes
   * it (ProxyFamily.login, src/pipeline/proxies.ts): the 401 naming the login
   * page in X-<abbrev>-Login, or the redirect itself, absolute from the
   * proxy's X-Forwarded-Host.
   */
  function toLoginThroughProxy (err: GatewayError, ctx: Live): GatewayError | undefined {
    const original = ctx.original!
    const byHeader = original.family.login === 'header'
    const proxied = (): string => forwardedOrigin(ctx.req, policy)
    const login = loginFor(ctx.req, err, original.method, original.url, proxied, byHeader ? '' : proxied())
    if (login === undefined) return err
    if (byHeader) {
      ctx.res.setHeader(policy.loginHeader, login)
      return err
    }
    redirect(ctx.res, 303, login, { 'x-request-id': ctx.requestId })
    ctx.answered = true
    return undefined
  }

  /**
   * Whether a refusal could be sent to sign in at all (loginFor's conditions
   * on the request alone): else it is handed on as it is (a refused API
   * client costs no closure for it).
   */
  function mayNavigate (req: http.IncomingMessage, method: string): boolean {
    return loginRedirect && (method === 'GET' || method === 'HEAD') && isNavigation(req)
  }

  /** ctx.identity, at once when authenticate answered from memory; a refusal is handed to the runner. */
  function identify (ctx: Flow): Result<void> {
    return mapResult(authenticate(ctx, ctx.original), identified, ctx)
  }

  /** identify, a refusal handed to `refusal` (which answers it, or hands it back). */
  function identifyOr (ctx: Live, refusal: (err: GatewayError, ctx: Live) => GatewayError | undefined): Result<void> {
    return mapResult(authenticate(ctx, ctx.original), identified, ctx, refusal)
  }

  function login (ctx: Live): Result<void> {
    return mayNavigate(ctx.req, ctx.req.method ?? '') ? identifyOr(ctx, toLogin) : identify(ctx)
  }

  function loginThroughProxy (ctx: Live): Result<void> {
    return mayNavigate(ctx.req, ctx.original!.method) ? identifyOr(ctx, toLoginThroughProxy) : identify(ctx)
  }

  /**
   * With access rules: authenticate as `then` does unless the rules bypass the
   * request or refuse it outright; `optional`: a request with no credential at
   * all goes on without one (a bypass rule follows the subject rules).
   */
  function ruled<C extends Flow> (ctx: C, then: (ctx: C) => Result<void>): Result<void> {
    const b = access!.before(ctx)
    if (b === 'bypass') return
    if (b === 'auth') return then(ctx)
    if (b instanceof GatewayError) return b
    return mapResult(identify(ctx), nothing, undefined, withoutCredential)
  }

  /** upstream.public_paths first, then the access rules (when any), then `then`. */
  const upstream = <C extends Flow>(then: (ctx: C) => Result<void>) => (ctx: C): Result<void> =>
    router.isPublicUpstream(ctx.target) ? undefined : access === null ? then(ctx) : ruled(ctx, then)

  return {
    'authenticate:login': login,
    'authenticate:browser': (ctx: Live) => ctx.req.headers.authorization === undefined ? browserSession(ctx) : undefined,
    'authenticate:public+login': upstream(login),
    'authenticate:original': upstream(loginThroughProxy),
    'authenticate:public': upstream<Flow>(identify)
  } satisfies Partial<Impl>
}

/** Goes on: a result with nothing in it. */
function nothing (): void {}

/** The caller is the request's identity. */
function identified (who: Identity, ctx: Flow): void { ctx.identity = who }

/** `session-page`: only a browser session is the page's caller. */
function sessionOnly (who: Identity, ctx: Live): void { if (who.method === 'session') ctx.identity = who }

/** `session-page`: no valid session is no refusal (the page decides); a failing store is. */
function refusedBeyond401 (err: GatewayError): GatewayError | undefined { return err.status === 401 ? undefined : err }

/** With access rules: a request that sent no credential at all goes on without one (the rules decide). */
function withoutCredential (err: GatewayError): GatewayError | undefined {
  return err.code === 'not_authenticated' ? undefined : err
}

/** The token of an `Authorization: Bearer …` header (as sent, for the audit's ref), else undefined. */
function bearerOf (req: http.IncomingMessage): string | undefined {
  const h = req.headers.authorization
  return typeof h === 'string' && /^bearer(?:\s|$)/i.test(h) ? h.slice(6).trim() : undefined
}
