/**
 * What the upstream sees: every client-sent copy of the identity headers is
 * removed first, then the resolved identity is set. The gateway's own
 * credentials (Authorization, session cookie) never leave it.
 */
import type { IncomingMessage } from 'node:http'
import type { TLSSocket } from 'node:tls'
import { randomUUID } from 'node:crypto'
import type { Config } from './config.js'
import type { Identity } from './auth/index.js'
import { withoutCookies } from './auth/parse.js'

export interface HeaderPolicy {
  /** lowercase names stripped from every proxied request */
  injected: string[]
  /** every header sidegate sets upstream, lowercase: their `_` spellings are dropped */
  owned: Set<string>
  orgHeader: string
  userIdHeader: string
  usernameHeader: string
  authMethodHeader: string
  credentialCookies: Set<string>
  trustedProxies: Set<string>
}

export function headerPolicy (config: Config): HeaderPolicy {
  const n = config.names
  const lower = [n.orgHeader, n.userIdHeader, n.usernameHeader, n.authMethodHeader].map((h) => h.toLowerCase())
  return {
    injected: lower,
    owned: new Set([...lower, 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-request-id']),
    orgHeader: lower[0],
    userIdHeader: lower[1],
    usernameHeader: lower[2],
    authMethodHeader: lower[3],
    credentialCookies: new Set([n.sessionCookie, n.legacySessionCookie, n.csrfCookie]),
    trustedProxies: new Set(config.server.trusted_proxies.map(normalizeIp))
  }
}

function normalizeIp (ip: string): string {
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip
}

/**
 * The real client address: X-Forwarded-For is believed only from a trusted
 * proxy, and only as far back as trusted proxies vouch for it: the rightmost
 * entry that is not a trusted proxy (anything left of it the client could forge).
 */
export function clientIp (req: IncomingMessage, p: HeaderPolicy): string {
  const peer = normalizeIp(req.socket.remoteAddress ?? '')
  if (!p.trustedProxies.has(peer)) return peer
  const xff = req.headers['x-forwarded-for']
  const hops = (Array.isArray(xff) ? xff.join(',') : xff ?? '').split(',').map((a) => normalizeIp(a.trim())).filter(Boolean)
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!p.trustedProxies.has(hops[i])) return hops[i]
  }
  return hops[0] ?? peer
}

/** Whether the client reached us over HTTPS: our own TLS, or a trusted proxy's `X-Forwarded-Proto: https`. */
export function isHttps (req: IncomingMessage, p: HeaderPolicy): boolean {
  if ((req.socket as TLSSocket).encrypted === true) return true
  if (!p.trustedProxies.has(normalizeIp(req.socket.remoteAddress ?? ''))) return false
  const v = req.headers['x-forwarded-proto']
  return (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim().toLowerCase() === 'https'
}

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

export function requestId (req: IncomingMessage): string {
  const v = req.headers['x-request-id']
  return typeof v === 'string' && REQUEST_ID.test(v) ? v : randomUUID()
}

/**
 * Removes client-sent identity headers, also spelled with `_` (CGI-style
 * servers such as WSGI and ASGI read `X_SVC_User_Id` as `X-SVC-User-Id`),
 * and sidegate's own credentials (Authorization, session and CSRF cookies).
 * Used for every proxied request, authenticated or not: a client that sends
 * its token everywhere must not hand it to the upstream on a public path.
 */
export function stripInjected (req: IncomingMessage, p: HeaderPolicy): void {
  const h = req.headers
  for (const name of p.injected) delete h[name]
  for (const name of Object.keys(h)) {
    if (name.includes('_') && p.owned.has(name.replace(/_/g, '-'))) delete h[name]
  }
  delete h.authorization
  const cookie = withoutCookies(h.cookie, p.credentialCookies)
  if (cookie === undefined) delete h.cookie
  else h.cookie = cookie
}

/** Sets the forwarding headers, honouring a trusted proxy's values. */
export function setForwarded (req: IncomingMessage, p: HeaderPolicy, reqId: string): void {
  const h = req.headers
  const peer = normalizeIp(req.socket.remoteAddress ?? '')
  const trusted = p.trustedProxies.has(peer)
  const prior = trusted ? h['x-forwarded-for'] : undefined
  h['x-forwarded-for'] = prior ? `${Array.isArray(prior) ? prior.join(', ') : prior}, ${peer}` : peer
  const tls = (req.socket as TLSSocket).encrypted === true
  if (!trusted || !h['x-forwarded-proto']) h['x-forwarded-proto'] = tls ? 'https' : 'http'
  if (!trusted || !h['x-forwarded-host']) {
    if (h.host) h['x-forwarded-host'] = h.host
    else delete h['x-forwarded-host']
  }
  h['x-request-id'] = reqId
}

/** Strip, then inject: the upstream request carries exactly the resolved identity. */
export function injectIdentity (req: IncomingMessage, p: HeaderPolicy, id: Identity, orgId: string): void {
  stripInjected(req, p)
  const h = req.headers
  h[p.userIdHeader] = id.user.id
  h[p.usernameHeader] = encodeHeaderValue(id.user.username)
  h[p.orgHeader] = orgId
  h[p.authMethodHeader] = id.method
}

/** Usernames may hold non-ASCII: percent-encode what a header cannot carry. */
function encodeHeaderValue (v: string): string {
  return /^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v)
}
