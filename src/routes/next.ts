/**
 * Where a sign-in sends the browser afterwards (`next`), and the login page a
 * refused browser is sent to. `next` is a path on this site, or, with
 * session.cookies (docs/sso.md), an absolute URL on a host under a configured
 * cookie domain: the app the browser came from. Everything else is the
 * fallback, never an error: the browser just lands on the portal's page.
 */
import { isLoopback, isUnder, type CookieDomain } from '../http/cookie-domains.js'
import { CSP } from './html.js'

export const LOGIN_PATH = '/login'
export const LOGOUT_PATH = '/logout'
/** A password-reset link's page (`sidegate user reset-link`) and where a signed-in user changes theirs. */
export const RESET_PATH = '/login/reset'
export const PASSWORD_PATH = '/account/password'
export const JMS_LOGIN_PATH = '/core/auth/login/' // `compat: jumpserver`: JumpServer's login and logout views (src/routes/index.ts)
export const JMS_LOGOUT_PATH = '/core/auth/logout/'
/** Where a login lands when `next` is missing or unsafe. */
export const HOME = '/account/keys'

const BASE = 'http://sidegate.invalid'
const SIGN_IN_PATHS = [LOGIN_PATH, LOGOUT_PATH, JMS_LOGIN_PATH, JMS_LOGOUT_PATH]
/** What no `next` may hold anywhere: backslashes, whitespace, control characters (browsers drop tabs and newlines). */
const UNSAFE = /[\\\s\x00-\x1f\x7f]/

/**
 * `next` if it is a same-origin path, else the fallback. Refused: anything
 * not starting with one "/" (absolute URLs, schemes, `//host`), backslashes
 * (`/\host`), control characters and whitespace (browsers drop tabs and
 * newlines, turning `/\t/host` into `//host`), and the login page itself.
 */
export function safeNext (v: unknown, fallback = HOME): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > 2048) return fallback
  if (v[0] !== '/' || v[1] === '/' || UNSAFE.test(v)) return fallback
  let u: URL
  try { u = new URL(v, BASE) } catch { return fallback }
  if (u.origin !== BASE || SIGN_IN_PATHS.includes(u.pathname)) return fallback
  const out = u.pathname + u.search + u.hash
  return out.startsWith('//') ? fallback : out
}

/**
 * The authority as written must be a plain host and port: no userinfo (`@`),
 * no escapes (`evil%2eexample.com` decodes to a name the string does not
 * show), no backslash; the scheme exactly http or https, any case.
 */
const ABSOLUTE = /^https?:\/\/[A-Za-z0-9.-]+(?::\d{1,5})?(?:[/?#]|$)/i

/**
 * An absolute `next` the portal may send the browser back to: https (http
 * only on a loopback host) on a host that is a configured cookie domain or
 * under one, parsed by WHATWG URL and judged by the parsed host, never by a
 * string prefix; the serialized URL, else null.
 */
export function crossHostNext (v: string, domains: readonly CookieDomain[]): string | null {
  if (domains.length === 0 || v.length > 2048 || UNSAFE.test(v) || !ABSOLUTE.test(v)) return null
  let u: URL
  try { u = new URL(v) } catch { return null }
  if (u.username !== '' || u.password !== '') return null
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopback(u.hostname))) return null
  // a trailing dot names the same host to DNS, another to cookies
  if (!domains.some((d) => isUnder(u.hostname, d.domain))) return null
  // the sign-in pages themselves, on whatever host: a loop, never a destination
  return SIGN_IN_PATHS.includes(u.pathname) ? null : u.href
}

/** `next` for this gateway: a safe path, or an allowed absolute URL (crossHostNext), else the fallback. */
export function nextFor (domains: readonly CookieDomain[]): (v: unknown, fallback?: string) => string {
  return (v, fallback = HOME) => typeof v === 'string' && v[0] !== '/'
    ? crossHostNext(v, domains) ?? fallback
    : safeNext(v, fallback)
}

/**
 * The login page for a browser sent to sign in from `original` (a request
 * target as received: latin1, so a raw UTF-8 byte is read back as UTF-8):
 * back there afterwards when it is a safe `next`, else to "/" (a target such
 * as `//evil.example/` or `/\evil` never leaves the site). `origin`: a
 * proxy's origin to make it absolute (src/pipeline/headers.ts forwardedOrigin), or ''.
 */
export function loginLocation (original: string, origin = ''): string {
  return `${origin}${LOGIN_PATH}?next=${encodeURIComponent(safeNext(utf8(original), '/'))}`
}

/**
 * The portal's login page for a browser refused at another host under its
 * cookie domain: `next` the absolute original URL (`origin` + the target),
 * or the portal's own page when that is not one crossHostNext allows.
 */
export function portalLocation (
  portal: CookieDomain, origin: string, original: string, all: readonly CookieDomain[]
): string {
  const path = safeNext(utf8(original), '/')
  const back = crossHostNext(`${origin}${path}`, all)
  return `${portal.portal_url}${LOGIN_PATH}${back === null ? '' : `?next=${encodeURIComponent(back)}`}`
}

function utf8 (target: string): string {
  return /[\x80-\xff]/.test(target) ? Buffer.from(target, 'latin1').toString('utf8') : target
}

/**
 * A page whose form sends the browser on to `next` on another host, or to
 * one of `origins` (an identity provider the login page's forms lead to): its
 * form-action names them too (Chromium holds a form's redirects to
 * form-action); a path and no origins keep the CSP as it is.
 */
export function pageHeadersFor (next: string, origins: readonly string[] = []): Record<string, string> {
  const extra = new Set(origins)
  if (next[0] !== '/') extra.add(new URL(next).origin)
  if (extra.size === 0) return {}
  return { 'content-security-policy': CSP.replace("form-action 'self'", `form-action 'self' ${[...extra].join(' ')}`) }
}
