/**
 * Authenticate: the first authenticator that claims the request decides
 * (src/auth/). The audit trail hears of a bearer token used or refused here.
 * A browser's navigation refused for want of a credential is sent to the
 * login page instead (loginFor, session.login_redirect).
 */
import type http from 'node:http'
import type { Identity } from '../auth/index.js'
import type { RequestContext, StepContext } from './context.js'
import { GatewayError } from '../errors.js'
import { isNavigation } from './headers.js'
import { parseCookies } from '../http/cookies.js'
import { redirect } from '../routes/html.js'
import { loginLocation } from '../routes/login.js'
import { auditOf, type PipelineOptions } from './options.js'

export function authenticateSteps (o: PipelineOptions) {
  const { auth } = o
  const audit = auditOf(o)
  const loginRedirect = o.config.session.login_redirect

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

  return { authenticate, browserSession, loginFor, sentToLogin }
}

/** The token of an `Authorization: Bearer …` header (as sent, for the audit's ref), else undefined. */
function bearerOf (req: http.IncomingMessage): string | undefined {
  const h = req.headers.authorization
  return typeof h === 'string' && /^bearer(?:\s|$)/i.test(h) ? h.slice(6).trim() : undefined
}
