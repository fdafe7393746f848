/**
 * `session.cookies`: the domains one sign-in covers (docs/sso.md). A request
 * whose host is a configured domain or under one gets the session cookie with
 * `Domain=<that domain>`, and is sent to sign in at its portal; any other host
 * keeps the host-only cookie. Hosts are compared as parsed names (lower case,
 * no port, no trailing dot), never as string prefixes of a URL.
 */
import { isIP } from 'node:net'
import { getPublicSuffix } from 'tldts'

export interface CookieDomain {
  /** `example.com`: lower case, no leading dot */
  domain: string
  /** `https://auth.example.com`: an origin, no path */
  portal_url: string
  /** the CSRF cookie shares the Domain (scripts of every host under it read the token) */
  csrf_domain: boolean
}

/** A DNS name: letters, digits and hyphens in dot-separated labels. */
const NAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

/**
 * A Host value (a name or an IP literal, an optional port) as a name: lower
 * case, no port, no trailing dot; else null.
 */
export function hostName (raw: string | undefined): string | null {
  if (raw === undefined) return null
  const m = /^(?:([A-Za-z0-9.-]+)|\[([0-9A-Fa-f:.]+)\])(?::\d{1,5})?$/.exec(raw.trim())
  if (m === null) return null
  if (m[2] !== undefined) return isIP(m[2]) === 6 ? m[2].toLowerCase() : null
  const name = m[1].toLowerCase().replace(/\.$/, '')
  return NAME.test(name) || isIP(name) === 4 ? name : null
}

/**
 * A loopback name, where browsers allow plain http in a secure context:
 * localhost and its sub-domains (RFC 6761), 127.0.0.1, ::1.
 */
export function isLoopback (host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1')
  return h === 'localhost' || h.endsWith('.localhost') || h === '127.0.0.1' || h === '::1'
}

/** `host` is `domain` or a name under it (`a.example.com` under `example.com`; `aexample.com` is not). */
export function isUnder (host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`)
}

/** Why a `session.cookies[].domain` cannot be used, or null (config validation). */
export function domainProblem (v: string): string | null {
  if (v === '') return 'is required: the domain the session cookie covers (example.com)'
  if (isIP(v.replace(/^\[(.*)\]$/, '$1')) !== 0) return 'must be a domain name, not an IP address (a cookie Domain cannot name an address)'
  if (v.startsWith('.')) return 'must be written without a leading dot'
  if (!NAME.test(v)) return 'must be a lower-case domain name (example.com)'
  // the public-suffix list with its private part (github.io): browsers refuse a cookie for either
  if (getPublicSuffix(v, { allowPrivateDomains: true }) === v) {
    return 'is a public suffix: a cookie for it would reach every site under it; name your own domain (example.com)'
  }
  return null
}

/** Why a `session.cookies[].portal_url` cannot be used, or null (its host's domain is checked with the entry). */
export function portalProblem (v: string): string | null {
  if (v === '') return 'is required: the URL of the sign-in portal (https://auth.example.com)'
  let u: URL
  try { u = new URL(v) } catch { return 'must be a URL (https://auth.example.com)' }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopback(u.hostname))) {
    return 'must be an https URL (http only for localhost, 127.0.0.1 and ::1)'
  }
  if (u.username !== '' || u.password !== '' || u.search !== '' || u.hash !== '' || u.pathname !== '/') {
    return 'must be an origin only (https://auth.example.com): no path, query or user'
  }
  return null
}

/**
 * Problems across the entries (each valid on its own): the portal's host under
 * its domain; no domain twice, nor under another (a host under both would get
 * two session cookies, which is ambiguous: 401).
 */
export function cookieDomainProblems (list: readonly CookieDomain[]): Array<{ key: string, message: string }> {
  const out: Array<{ key: string, message: string }> = []
  list.forEach((c, i) => {
    const host = new URL(c.portal_url).hostname.replace(/^\[(.*)\]$/, '$1')
    if (!isUnder(host, c.domain)) {
      out.push({ key: `session.cookies[${i}].portal_url`, message: `its host ${host} is not ${c.domain} nor under it: the portal's cookie would not reach the apps` })
    }
    const wider = list.findIndex((o, j) => j !== i && isUnder(c.domain, o.domain) && (o.domain !== c.domain || j < i))
    if (wider !== -1) out.push({ key: `session.cookies[${i}].domain`, message: `${c.domain} is covered by session.cookies[${wider}] (${list[wider].domain}): list one of them` })
  })
  return out
}

export const PLAIN_COOKIE_WARNING = 'session.cookies with session.cookie_secure false: a request that came over plain http (not TLS, and no trusted proxy said X-Forwarded-Proto: https)' +
  ' gets a session cookie without Secure, and the browser then sends it over http to every host under the domain; set session.cookie_secure: true'

/** `sidegate config check`'s and the start's warnings (src/config/index.ts configWarningList). */
export function cookieDomainWarnings (
  s: { cookies: readonly CookieDomain[], cookie_secure: boolean }
): Array<{ code: string, msg: string, entries: string[] }> {
  const plain = s.cookies.flatMap((c, i) => s.cookie_secure || isLoopback(new URL(c.portal_url).hostname) ? [] : [`session.cookies[${i}]`])
  return plain.length === 0 ? [] : [{ code: 'cookie_domain_not_secure', msg: PLAIN_COOKIE_WARNING, entries: plain }]
}

/** The entry whose domain covers `host` (the longest, when one is under another), else null. */
export function domainFor (list: readonly CookieDomain[], host: string | null): CookieDomain | null {
  if (host === null) return null
  let best: CookieDomain | null = null
  for (const c of list) if (isUnder(host, c.domain) && (best === null || c.domain.length > best.domain.length)) best = c
  return best
}
