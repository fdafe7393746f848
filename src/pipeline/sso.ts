/**
 * One sign-in for several apps (session.cookies, docs/sso.md), as a request
 * sees it: which configured cookie domain covers the host it addressed (a
 * trusted proxy's X-Forwarded-Host, else Host: addressedHost), so which
 * Domain its cookies take and which portal a refused browser is sent to.
 * Without session.cookies every answer is today's: host-only cookies, the
 * login page on the same host.
 */
import type { IncomingMessage } from 'node:http'
import { domainFor, hostName, type CookieDomain } from '../http/cookie-domains.js'
import { loginLocation, nextFor, portalLocation } from '../routes/next.js'
import type { HeaderPolicy } from './headers.js'
import { addressedHost } from './origin.js'

export interface SessionScope {
  readonly domains: readonly CookieDomain[]
  /** The entry whose domain covers the request's host, else null (host-only cookies). */
  of: (req: IncomingMessage) => CookieDomain | null
  /** `; Domain=<domain>` for the session cookie, else '' */
  sessionDomain: (req: IncomingMessage) => string
  /** the CSRF cookie's: the portal's host only unless the entry says csrf_domain */
  csrfDomain: (req: IncomingMessage) => string
  /**
   * The login page for a browser refused at this request's host for the
   * target `url`: at its domain's portal with the absolute URL (`origin`:
   * the original request's, '' unknown) when the host is not the portal's;
   * else the page on this host (`relative`: the prefix today's Location takes).
   */
  login: (req: IncomingMessage, url: string, origin: string, relative: string) => string
  /** `next` as the sign-in pages take it (src/routes/next.ts nextFor). */
  next: (v: unknown, fallback?: string) => string
}

export function sessionScope (domains: readonly CookieDomain[], p: HeaderPolicy): SessionScope {
  const portals = new Set(domains.map((d) => hostName(new URL(d.portal_url).host)))
  const of = (req: IncomingMessage): CookieDomain | null =>
    domains.length === 0 ? null : domainFor(domains, hostName(addressedHost(req, p)))
  return {
    domains,
    of,
    sessionDomain: (req) => { const d = of(req); return d === null ? '' : `; Domain=${d.domain}` },
    csrfDomain: (req) => { const d = of(req); return d === null || !d.csrf_domain ? '' : `; Domain=${d.domain}` },
    login (req, url, origin, relative) {
      const d = of(req)
      if (d === null || portals.has(hostName(addressedHost(req, p)))) return loginLocation(url, relative)
      return portalLocation(d, origin, url, domains)
    },
    next: nextFor(domains)
  }
}
