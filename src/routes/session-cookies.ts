/**
 * The browser session's cookies as a sign-in sets them and a logout clears
 * them: `<abbrev>_sessionid` (HttpOnly) and `<abbrev>_csrftoken` (read by
 * scripts for X-CSRFToken), SameSite=Lax, Path=/, Secure over HTTPS or with
 * session.cookie_secure. Under a configured cookie domain (session.cookies,
 * src/pipeline/sso.ts) the session cookie takes `Domain=`, and the CSRF
 * cookie too only with csrf_domain.
 */
import type { Names } from '../config/index.js'
import type { SessionScope } from '../pipeline/sso.js'
import type { RequestContext } from './types.js'

export interface SessionCookies {
  /** a new session's cookies */
  set: (ctx: RequestContext, id: string, csrf: string) => string[]
  /** every copy cleared: the domain's and this host's own */
  clear: (ctx: RequestContext) => string[]
  /** the legacy name cleared (a sign-in that finds it beside the new cookie) */
  clearLegacy: (ctx: RequestContext) => string
}

export function sessionCookies (
  names: Names, o: { cookieSecure: boolean, acceptLegacy: boolean }, sso: SessionScope
): SessionCookies {
  const tail = (ctx: RequestContext): string => `; SameSite=Lax${o.cookieSecure || ctx.https ? '; Secure' : ''}`
  const gone = (ctx: RequestContext, name: string, domain: string, httpOnly: boolean): string =>
    `${name}=; Path=/${domain}; Max-Age=0${httpOnly ? '; HttpOnly' : ''}${tail(ctx)}`
  /** Both scopes of one name: a host-only copy left beside a Domain one would make the pair ambiguous (401). */
  const both = (ctx: RequestContext, name: string, domain: string, httpOnly: boolean): string[] =>
    domain === '' ? [gone(ctx, name, '', httpOnly)] : [gone(ctx, name, '', httpOnly), gone(ctx, name, domain, httpOnly)]
  return {
    set (ctx, id, csrf) {
      const sd = sso.sessionDomain(ctx.req)
      const cd = sso.csrfDomain(ctx.req)
      return [
        // first the host-only copies a Domain cookie replaces (the last Set-Cookie of a name is the one that stays)
        ...(sd === '' ? [] : [gone(ctx, names.sessionCookie, '', true)]),
        ...(cd === '' ? [] : [gone(ctx, names.csrfCookie, '', false)]),
        `${names.sessionCookie}=${id}; Path=/${sd}; HttpOnly${tail(ctx)}`,
        `${names.csrfCookie}=${csrf}; Path=/${cd}${tail(ctx)}`
      ]
    },
    clear: (ctx) => [
      ...both(ctx, names.sessionCookie, sso.sessionDomain(ctx.req), true),
      ...both(ctx, names.csrfCookie, sso.sessionDomain(ctx.req), false),
      ...(o.acceptLegacy ? [gone(ctx, names.legacySessionCookie, '', true)] : [])
    ],
    clearLegacy: (ctx) => gone(ctx, names.legacySessionCookie, '', true)
  }
}
