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
import { GatewayError } from '../errors.js'
import { forwardedOrigin, isNavigation } from './headers.js'
import { parseCookies } from '../http/cookies.js'
import { redirect } from '../routes/html.js'
import { loginLocation } from '../routes/login.js'
import { auditOf, type PipelineOptions } from './options.js'
import type { AccessGate } from './access.js'

export function authenticateSteps (o: PipelineOptions, access: AccessGate | null) {
  const { auth, router, policy } = o
  const audit = auditOf(o)
  const loginRedirect = o.config.session.login_redirect

  /**
   * The caller, or a GatewayError: 401, 403 (a session's CSRF token), 503 (the store);
   * one decided from memory is returned (auth.resolve), else thrown or rejected with.
   * `original`: a decision's original method and URI (the `original` step).
   * Audited: a bearer token used or refused (an access key's first use: keyIp, steps.ts).
   */
  function authenticate (
    ctx: StepContext, original?: { method: string, url: string }
  ): Identity | GatewayError | Promise<Identity> {
    if (audit === null) return auth.resolve(ctx.req, original)
    let who: Identity | GatewayError | Promise<Identity>
    try {
      who = auth.resolve(ctx.req, original)
    } catch (err) {
      throw refused(ctx, err)
    }
    if (who instanceof GatewayError) return refused(ctx, who)
    return who instanceof Promise
      ? who.then((w) => audited(ctx, w), (err: unknown) => { throw refused(ctx, err) })
      : audited(ctx, who)
  }

  function audited (ctx: StepContext, who: Identity): Identity {
    if (who.method === 'bearer') {
      audit!.record({
        event: 'token.used',
        ctx: { ...ctx, identity: who },
        user: who.user,
        credential: bearerOf(ctx.req)
      })
    }
    return who
  }

  /** Audits a refused bearer token; the refusal itself is handed back (to throw or return). */
  function refused<E> (ctx: StepContext, err: E): E {
    const token = bearerOf(ctx.req)
    if (token !== undefined && err instanceof GatewayError && err.status === 401) {
      audit!.record({ event: 'token.refused', ctx, authMethod: 'bearer', reason: err.code, credential: token })
    }
    return err
  }

  /**
   * `session-page` routes: the browser's session when it has a valid one,
   * else none (the page decides); a request with an Authorization header is
   * not a browser's (not asked here). Only a failing store is an error.
   */
  async function browserSession (ctx: Live): Promise<void> {
    try {
      const who = await auth.authenticate(ctx.req)
      if (who.method === 'session') ctx.identity = who
    } catch (err) {
      if (!(err instanceof GatewayError && err.status === 401)) throw err
    }
  }

  /**
   * session.login_redirect: the login page, with `url` as where to come back
   * to, in place of a 401 for a browser's navigation (GET or HEAD: another
   * method's body could not be sent again after signing in) that carried no
   * credential, or one session cookie that is no longer valid (expired, logged
   * out: how a browser's session ends). Else undefined: any other refused
   * credential, and a session cookie sent twice with different values, keep
   * their 401 (signing in would not change them). Only authenticate refuses
   * with these codes, so only its refusals are looked at.
   */
  function loginFor (
    req: http.IncomingMessage, err: unknown, method: string, url: string, origin = ''
  ): string | undefined {
    if (!loginRedirect || !(err instanceof GatewayError)) return undefined
    if (err.code !== 'not_authenticated' && err.code !== 'invalid_session') return undefined
    if ((method !== 'GET' && method !== 'HEAD') || !isNavigation(req)) return undefined
    if (err.code === 'invalid_session' &&
      typeof auth.session.cookieValue({ cookies: parseCookies(req.headers.cookie) }) !== 'string') return undefined
    return loginLocation(url, origin)
  }

  /** A refusal answered with a redirect to the login page instead (loginFor), else thrown on. */
  function toLogin (ctx: Live, err: unknown): void {
    const login = loginFor(ctx.req, err, ctx.req.method ?? '', ctx.req.url ?? '/')
    if (login === undefined) throw err
    // 303: "see the login page" (a GET whatever came), never stored
    redirect(ctx.res, 303, login, { 'x-request-id': ctx.requestId })
    ctx.answered = true
  }

  /**
   * A decision's refusal sent to sign in, as the proxy family that asked takes
   * it (ProxyFamily.login, src/pipeline/proxies.ts): the 401 naming the login
   * page in X-<abbrev>-Login, or the redirect itself, absolute from the
   * proxy's X-Forwarded-Host.
   */
  function toLoginThroughProxy (ctx: Live, err: unknown): void {
    const original = ctx.original!
    const byHeader = original.family.login === 'header'
    const login = loginFor(
      ctx.req, err, original.method, original.url, byHeader ? '' : forwardedOrigin(ctx.req, policy)
    )
    if (login === undefined) throw err
    if (byHeader) {
      ctx.res.setHeader(policy.loginHeader, login)
      throw err
    }
    redirect(ctx.res, 303, login, { 'x-request-id': ctx.requestId })
    ctx.answered = true
  }

  /**
   * Whether a refusal could be sent to sign in at all (loginFor's conditions
   * on the request alone): else it is thrown on as it is, never caught and
   * thrown again (a refused API client costs one throw).
   */
  function mayNavigate (req: http.IncomingMessage, method: string): boolean {
    return loginRedirect && (method === 'GET' || method === 'HEAD') && isNavigation(req)
  }

  /** ctx.identity, at once when authenticate answered from memory; a refusal from memory is returned to the runner. */
  function identify (ctx: Flow): void | GatewayError | Promise<void> {
    const who = authenticate(ctx, ctx.original)
    if (who instanceof GatewayError) return who
    if (!(who instanceof Promise)) ctx.identity = who
    else return who.then((w) => { ctx.identity = w })
  }

  /** identify, a refusal handed to `refusal` (which answers it, or throws it on). */
  function identifyOr (ctx: Live, refusal: (ctx: Live, err: unknown) => void): void | Promise<void> {
    let who: Identity | GatewayError | Promise<Identity>
    try {
      who = authenticate(ctx, ctx.original)
    } catch (err) {
      refusal(ctx, err)
      return
    }
    if (who instanceof GatewayError) { refusal(ctx, who); return }
    if (!(who instanceof Promise)) ctx.identity = who
    else return who.then((w) => { ctx.identity = w }, (err: unknown) => refusal(ctx, err))
  }

  function login (ctx: Live): void | GatewayError | Promise<void> {
    return mayNavigate(ctx.req, ctx.req.method ?? '') ? identifyOr(ctx, toLogin) : identify(ctx)
  }

  function loginThroughProxy (ctx: Live): void | GatewayError | Promise<void> {
    return mayNavigate(ctx.req, ctx.original!.method) ? identifyOr(ctx, toLoginThroughProxy) : identify(ctx)
  }

  /**
   * With access rules: authenticate as `then` does unless the rules bypass the
   * request or refuse it outright; `optional`: a request with no credential at
   * all goes on without one (a bypass rule follows the subject rules).
   */
  function ruled<C extends Flow> (
    ctx: C, then: (ctx: C) => void | GatewayError | Promise<void>
  ): void | GatewayError | Promise<void> {
    const b = access!.before(ctx)
    if (b === 'bypass') return
    if (b === 'auth') return then(ctx)
    if (b instanceof GatewayError) return b
    let r: void | GatewayError | Promise<void>
    try {
      r = identify(ctx)
    } catch (err) {
      if (noCredential(err)) return
      throw err
    }
    if (r instanceof GatewayError) return noCredential(r) ? undefined : r
    if (r instanceof Promise) return r.catch((err: unknown) => { if (!noCredential(err)) throw err })
  }

  /** upstream.public_paths first, then the access rules (when any), then `then`. */
  const upstream = <C extends Flow>(
    then: (ctx: C) => void | GatewayError | Promise<void>
  ) => (ctx: C): void | GatewayError | Promise<void> =>
      router.isPublicUpstream(ctx.target) ? undefined : access === null ? then(ctx) : ruled(ctx, then)

  return {
    'authenticate:login': login,
    'authenticate:browser': (ctx: Live) => ctx.req.headers.authorization === undefined ? browserSession(ctx) : undefined,
    'authenticate:public+login': upstream(login),
    'authenticate:original': upstream(loginThroughProxy),
    'authenticate:public': upstream<Flow>(identify)
  } satisfies Partial<Impl>
}

/** A refusal for want of any credential (none sent at all). */
function noCredential (err: unknown): boolean {
  return err instanceof GatewayError && err.code === 'not_authenticated'
}

/** The token of an `Authorization: Bearer …` header (as sent, for the audit's ref), else undefined. */
function bearerOf (req: http.IncomingMessage): string | undefined {
  const h = req.headers.authorization
  return typeof h === 'string' && /^bearer(?:\s|$)/i.test(h) ? h.slice(6).trim() : undefined
}
