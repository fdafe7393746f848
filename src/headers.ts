/**
 * What the upstream sees: every client-sent copy of the identity headers is
 * removed first, then the resolved identity is set. The gateway's own
 * credentials (Authorization, session cookie) never leave it.
 */
import type { IncomingMessage } from 'node:http'
import type { TLSSocket } from 'node:tls'
import { randomUUID } from 'node:crypto'
import { BlockList, isIP } from 'node:net'
import type { Config } from './config.js'
import type { Identity } from './auth/index.js'
import { withoutCookies } from './http/cookies.js'
import { withResolvedOid } from './org.js'

export interface HeaderPolicy {
  /**
   * lowercase names stripped from every proxied request: the identity headers
   * of this gateway's names and of both families (X-SVC-*, X-JMS-*), and X-CSRFToken
   */
  injected: Set<string>
  /** every name above and every header sidegate sets upstream, lowercase: their `_` spellings are dropped */
  owned: Set<string>
  orgHeader: string
  userIdHeader: string
  usernameHeader: string
  authMethodHeader: string
  /** X-<abbrev>-Identity, lowercase */
  identityHeader: string
  /** identity.jwt enabled: the signed identity token of a caller in an org (src/identity.ts) */
  identityToken?: (id: Identity, orgId: string) => string
  credentialCookies: Set<string>
  /** whether a peer (or an X-Forwarded-For hop) is one of server.trusted_proxies */
  trusted: (ip: string) => boolean
}

/** The identity headers sidegate injects under an abbreviation, lowercase (as config.ts namesFor names them). */
function identityHeaders (abbrev: string): string[] {
  const a = abbrev.toLowerCase()
  return [`x-${a}-org`, `x-${a}-user-id`, `x-${a}-username`, `x-${a}-auth-method`, `x-${a}-identity`]
}

/** `identityToken`: identity.jwt's signer, when enabled (the header is stripped from clients either way). */
export function headerPolicy (config: Config, identityToken?: HeaderPolicy['identityToken']): HeaderPolicy {
  const n = config.names
  const lower = [n.orgHeader, n.userIdHeader, n.usernameHeader, n.authMethodHeader, n.identityHeader].map((h) => h.toLowerCase())
  // both families, whatever this gateway's names: on a fleet with SVC and JMS
  // gateways an upstream may trust either, so neither may come from a client
  const injected = new Set([...lower, ...identityHeaders('SVC'), ...identityHeaders('JMS'), 'x-csrftoken'])
  return {
    injected,
    owned: new Set([...injected, 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-request-id', 'x-real-ip']),
    orgHeader: lower[0],
    userIdHeader: lower[1],
    usernameHeader: lower[2],
    authMethodHeader: lower[3],
    identityHeader: lower[4],
    identityToken,
    credentialCookies: new Set([n.sessionCookie, n.legacySessionCookie, n.csrfCookie]),
    trusted: trustedProxies(config.server.trusted_proxies)
  }
}

/**
 * Headers that tell an upstream who the client is, how it connected or what
 * it asked for before a proxy rewrote it, lowercase: only a trusted proxy may
 * send them (besides these names, every `x-forwarded-*` and `x-auth-request-*`).
 */
const FORWARDING = new Set([
  'forwarded', 'x-forwarded', 'x-real-ip', 'true-client-ip', 'x-client-ip', 'client-ip', 'cf-connecting-ip', 'fastly-client-ip',
  'x-cluster-client-ip', 'x-original-url', 'x-rewrite-url', 'x-original-uri', 'x-original-host', 'x-host', 'remote-user', 'x-remote-user'
])

function isForwarding (name: string): boolean {
  return FORWARDING.has(name) || name.startsWith('x-forwarded-') || name.startsWith('x-auth-request-')
}

/** IPv4-mapped IPv6 (`::ffff:10.0.0.1`, how a dual-stack listener reports IPv4 peers) → plain IPv4. */
function normalizeIp (ip: string): string {
  return ip.toLowerCase().startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip
}

/**
 * `server.trusted_proxies`: addresses (`10.0.0.7`, `::1`) and CIDR ranges
 * (`10.0.0.0/8`, `fd00::/8`), checked with node:net's BlockList. An entry that
 * is neither throws (config validation reports it with the key's name).
 */
export function trustedProxies (entries: string[]): (ip: string) => boolean {
  const list = new BlockList()
  for (const raw of entries) {
    const [addr, bits, ...rest] = raw.trim().split('/')
    const family = isIP(addr)
    const max = family === 4 ? 32 : 128
    if (family === 0 || rest.length > 0 || (bits !== undefined && !/^\d{1,3}$/.test(bits)) || Number(bits ?? 0) > max) {
      throw new Error(`not an IP address or CIDR range: ${JSON.stringify(raw)}`)
    }
    if (bits === undefined) {
      const a = normalizeIp(addr) // an IPv4-mapped address is checked as the IPv4 one
      list.addAddress(a, isIP(a) === 4 ? 'ipv4' : 'ipv6')
    } else list.addSubnet(addr, Number(bits), family === 4 ? 'ipv4' : 'ipv6')
  }
  if (entries.length === 0) return () => false
  return (ip: string): boolean => {
    const a = normalizeIp(ip)
    const family = isIP(a)
    return family !== 0 && list.check(a, family === 4 ? 'ipv4' : 'ipv6')
  }
}

/**
 * The real client address: X-Forwarded-For is believed only from a trusted
 * proxy, and only as far back as trusted proxies vouch for it: the rightmost
 * entry that is not a trusted proxy (anything left of it the client could forge).
 */
export function clientIp (req: IncomingMessage, p: HeaderPolicy): string {
  const peer = normalizeIp(req.socket.remoteAddress ?? '')
  if (!p.trusted(peer)) return peer
  const xff = req.headers['x-forwarded-for']
  const hops = (Array.isArray(xff) ? xff.join(',') : xff ?? '').split(',').map((a) => normalizeIp(a.trim())).filter(Boolean)
  // right to left, skipping the hops trusted proxies added; a hop that is not
  // an address at all (a broken or forged entry) ends the walk at the last good one
  let nearest = peer
  for (let i = hops.length - 1; i >= 0; i--) {
    if (isIP(hops[i]) === 0) return nearest
    if (!p.trusted(hops[i])) return hops[i]
    nearest = hops[i]
  }
  return nearest
}

/** Whether the client reached us over HTTPS: our own TLS, or a trusted proxy's `X-Forwarded-Proto: https`. */
export function isHttps (req: IncomingMessage, p: HeaderPolicy): boolean {
  if ((req.socket as TLSSocket).encrypted === true) return true
  if (!p.trusted(req.socket.remoteAddress ?? '')) return false
  const v = req.headers['x-forwarded-proto']
  return (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim().toLowerCase() === 'https'
}

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

export function requestId (req: IncomingMessage): string {
  const v = req.headers['x-request-id']
  return typeof v === 'string' && REQUEST_ID.test(v) ? v : randomUUID()
}

/**
 * One pass over the header names of every proxied request, authenticated or
 * not, removing:
 * - the identity headers of both families (X-SVC-*, X-JMS-*) and X-CSRFToken;
 * - from a peer that is not in server.trusted_proxies, the forwarding headers
 *   (FORWARDING, any `X-Forwarded-*`, any `X-Auth-Request-*`; setForwarded then
 *   sets X-Forwarded-For, -Proto and -Host itself);
 * - from any peer, the `_` spellings of all of these and of every header
 *   sidegate sets (CGI-style servers such as WSGI and ASGI read
 *   `X_SVC_User_Id` as `X-SVC-User-Id`; no proxy sends them);
 * and sidegate's own credentials (Authorization, session and CSRF cookies): a
 * client that sends its token everywhere must not hand it to the upstream on a
 * public path.
 */
export function stripInjected (req: IncomingMessage, p: HeaderPolicy): void {
  const h = req.headers
  const trusted = p.trusted(normalizeIp(req.socket.remoteAddress ?? ''))
  for (const name of Object.keys(h)) {
    if (p.injected.has(name)) delete h[name]
    else if (name.includes('_')) {
      const dashed = name.replace(/_/g, '-')
      if (p.owned.has(dashed) || isForwarding(dashed)) delete h[name]
    } else if (!trusted && isForwarding(name)) delete h[name]
  }
  delete h.authorization
  const cookie = withoutCookies(h.cookie, p.credentialCookies)
  if (cookie === undefined) delete h.cookie
  else h.cookie = cookie
}

/**
 * Sets the forwarding headers, honouring a trusted proxy's values (what any
 * other peer sent was removed by stripInjected).
 */
export function setForwarded (req: IncomingMessage, p: HeaderPolicy, reqId: string): void {
  const h = req.headers
  const peer = normalizeIp(req.socket.remoteAddress ?? '')
  const trusted = p.trusted(peer)
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

/**
 * Strip, then inject: the upstream request carries exactly the resolved
 * identity (with identity.jwt, also as a signed token: src/identity.ts; it
 * throws 503 when the signing keys cannot be read), and a query `oid` (any
 * spelling) names the resolved org. Called
 * after authentication: a signature covers the target as the client sent it.
 */
export function injectIdentity (req: IncomingMessage, p: HeaderPolicy, id: Identity, orgId: string): void {
  stripInjected(req, p)
  if (req.url !== undefined) req.url = withResolvedOid(req.url, orgId)
  const h = req.headers
  h[p.userIdHeader] = id.user.id
  h[p.usernameHeader] = encodeHeaderValue(id.user.username)
  h[p.orgHeader] = orgId
  h[p.authMethodHeader] = id.method
  if (p.identityToken !== undefined) h[p.identityHeader] = p.identityToken(id, orgId)
}

/** Usernames may hold non-ASCII: percent-encode what a header cannot carry. */
function encodeHeaderValue (v: string): string {
  return /^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v)
}
