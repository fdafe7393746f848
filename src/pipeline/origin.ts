/**
 * Is this request from another site? The one check behind the token endpoint,
 * `/login`, `/logout` and WebSocket upgrades authenticated by the session
 * cookie (form posts and WebSocket handshakes are the requests a browser sends
 * cross-site without a CORS preflight).
 *
 * A browser names where a request comes from in `Sec-Fetch-Site`; older ones
 * only in `Origin` (or, for some form posts, only in `Referer`). So, in order:
 *   1. `Sec-Fetch-Site` present: anything but `same-origin` or `none` (typed
 *      URL, bookmark) is cross-site; `same-site` too (a sibling sub-domain is
 *      exactly the attacker this guards against).
 *   2. else `Origin` present: cross-site unless it is the gateway's own origin;
 *      `Origin: null` (sandboxed frames, redirects across sites, `data:`
 *      pages) is cross-site.
 *   3. else `Referer` present: cross-site unless its origin is the gateway's.
 *   4. none of them: not a browser (curl, scripts, SDKs), not cross-site.
 *
 * The gateway's own origin is the one the browser addressed, see ownOrigin.
 */
import type { IncomingMessage } from 'node:http'
import { isHttps, type HeaderPolicy } from './headers.js'

/**
 * A Host (or X-Forwarded-Host) value: a name or an IP literal, an
 * optional port; nothing a URL could read as userinfo or path.
 */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim()

/** `scheme://host[:port]` as browsers serialize an origin (lowercase, default port dropped), or null. */
function normalize (scheme: string, host: string): string | null {
  if (!HOST.test(host)) return null
  try { return new URL(`${scheme}://${host}`).origin } catch { return null }
}

/**
 * The gateway's own origin as the browser sees it: `https` when the request
 * came over TLS, a trusted proxy said `X-Forwarded-Proto: https`, or
 * `session.cookie_secure` is on (the gateway is then meant to be reached over
 * HTTPS only), else `http`; the host from a trusted proxy's
 * `X-Forwarded-Host`, else `Host`. A browser sets `Host` itself, so an
 * attacker's page cannot choose it. Null when there is no usable host: every
 * `Origin` and `Referer` is then cross-site.
 */
export function ownOrigin (req: IncomingMessage, p: HeaderPolicy, assumeHttps: boolean): string | null {
  const scheme = assumeHttps || isHttps(req, p) ? 'https' : 'http'
  const host = addressedHost(req, p)
  return host === undefined ? null : normalize(scheme, host)
}

/** The host the browser addressed, as sent: a trusted proxy's X-Forwarded-Host, else Host. */
export function addressedHost (req: IncomingMessage, p: HeaderPolicy): string | undefined {
  const forwarded = p.trusted(req.socket.remoteAddress ?? '') ? first(req.headers['x-forwarded-host']) : undefined
  return forwarded !== undefined && forwarded !== '' ? forwarded : req.headers.host
}

function originOf (url: string): string | null {
  try {
    const u = new URL(url)
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : null
  } catch { return null }
}

/** True when a browser sent this request from another site (see the rules above). */
export function isCrossSite (req: IncomingMessage, own: string | null): boolean {
  const h = req.headers
  const site = h['sec-fetch-site']
  if (site !== undefined) return site !== 'same-origin' && site !== 'none'
  const origin = h.origin
  if (origin !== undefined) return own === null || originOf(origin) !== own
  const referer = h.referer
  if (referer !== undefined) return own === null || originOf(referer) !== own
  return false
}

/** The check with the gateway's own origin worked out from the request and the configuration. */
export function crossSiteCheck (p: HeaderPolicy, assumeHttps: boolean): (req: IncomingMessage) => boolean {
  return (req) => isCrossSite(req, ownOrigin(req, p, assumeHttps))
}
