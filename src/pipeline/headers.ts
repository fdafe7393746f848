/**
 * What the upstream sees: every client-sent copy of the identity headers is
 * removed first, then the resolved identity is set. The gateway's own
 * credentials (Authorization, session cookie) never leave it.
 */
import type { IncomingMessage } from 'node:http'
import type { TLSSocket } from 'node:tls'
import { createRequire } from 'node:module'
import { BlockList, isIP } from 'node:net'
import type { Config } from '../config/index.js'
import type { Identity } from '../auth/index.js'
import { E } from '../errors.js'
import { withoutCookies } from '../http/cookies.js'
import { unmapIp } from '../http/address.js'
import { PROXY_FAMILIES, familyOf, sentMethod, type ProxyFamily } from './proxies.js'
import { groupsSent, namedGroups } from '../access/groups.js'
import type { UserGroup } from '../store/types.js'
import { workloadHeader } from '../auth/workload.js'

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
  /** X-<abbrev>-Auth-Factors, lowercase: a session's or bearer token's sign-in factors */
  authFactorsHeader: string
  identityHeader: string
  /** X-<abbrev>-Login and -Error, lowercase: for nginx, a decision's login page and refusal code */
  loginHeader: string
  errorHeader: string
  /** X-<abbrev>-Groups, lowercase */
  groupsHeader: string
  /** X-<abbrev>-Workload, lowercase: a Kubernetes token's pod and service account (src/auth/workload.ts) */
  workloadHeader: string
  /** The groups sent for a user (src/access/groups.ts groupsSent: identity.groups_max_bytes); undefined: none */
  groupsOf: (groups: readonly UserGroup[] | undefined) => string | undefined
  /** identity.jwt on: the signed identity token of a caller in an org, the groups sent (src/forward/identity.ts) */
  identityToken?: (id: Identity, orgId: string, requestId: string, groups: string | undefined) => string
  credentialCookies: Set<string>
  /** whether a peer (or an X-Forwarded-For hop) is one of server.trusted_proxies */
  trusted: (ip: string) => boolean
}

/** The identity headers sidegate injects under an abbreviation, lowercase (as config.ts namesFor names them). */
function identityHeaderNames (abbrev: string): string[] {
  const a = abbrev.toLowerCase()
  return ['org', 'user-id', 'username', 'auth-method', 'auth-factors', 'identity', 'groups', 'workload'].map((h) => `x-${a}-${h}`)
}

/** `identityToken`: identity.jwt's signer, when enabled (the header is stripped from clients either way). */
export function headerPolicy (config: Config, identityToken?: HeaderPolicy['identityToken']): HeaderPolicy {
  const n = config.names
  const lower = [
    n.orgHeader, n.userIdHeader, n.usernameHeader, n.authMethodHeader, n.identityHeader, n.authFactorsHeader,
    `X-${n.abbrev}-Groups`, `X-${n.abbrev}-Workload`
  ].map((h) => h.toLowerCase())
  // both families, whatever this gateway's names: on a fleet with SVC and JMS
  // gateways an upstream may trust either, so neither may come from a client
  const injected = new Set([...lower, ...identityHeaderNames('SVC'), ...identityHeaderNames('JMS'), 'x-csrftoken'])
  return {
    injected,
    owned: new Set([...injected, 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-request-id', 'x-real-ip']),
    orgHeader: lower[0],
    userIdHeader: lower[1],
    usernameHeader: lower[2],
    authMethodHeader: lower[3],
    identityHeader: lower[4],
    authFactorsHeader: lower[5],
    loginHeader: `x-${n.abbrev.toLowerCase()}-login`,
    errorHeader: `x-${n.abbrev.toLowerCase()}-error`,
    groupsHeader: lower[6],
    workloadHeader: lower[7],
    groupsOf: groupsSent(config.identity.groups_max_bytes, namedGroups(config.access.rules)),
    identityToken,
    credentialCookies: new Set([n.sessionCookie, n.legacySessionCookie, n.csrfCookie, n.mfaCookie]),
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
  'x-cluster-client-ip', 'x-original-url', 'x-rewrite-url', 'x-original-uri', 'x-original-host', 'x-host', 'remote-user', 'x-remote-user',
  // W3C baggage: upstream telemetry reads it as facts about the
  // request (user.id=…); like traceparent, only a trusted peer's
  'baggage'
])

function isForwarding (name: string): boolean {
  return FORWARDING.has(name) || name.startsWith('x-forwarded-') || name.startsWith('x-auth-request-')
}

const normalizeIp = unmapIp

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
  // BlockList.check builds a SocketAddress per call; a request asks up to four
  // times about the same peer, and peers repeat: the answers are remembered
  // (bounded, the list is fixed)
  const known = new Map<string, boolean>()
  return (ip: string): boolean => {
    let yes = known.get(ip)
    if (yes !== undefined) return yes
    const a = normalizeIp(ip)
    const family = isIP(a)
    yes = family !== 0 && list.check(a, family === 4 ? 'ipv4' : 'ipv6')
    if (known.size >= TRUST_MEMO_MAX) known.clear()
    known.set(ip, yes)
    return yes
  }
}

/** How many addresses trustedProxies remembers its answer for. */
const TRUST_MEMO_MAX = 10_000

/**
 * The real client address: X-Forwarded-For is believed only from a trusted
 * proxy, and only as far back as trusted proxies vouch for it: the rightmost
 * entry that is not a trusted proxy (anything left of it the client could forge).
 * A hop may carry a port (`203.0.113.7:5555`, `[2001:db8::7]:5555`: Azure
 * Application Gateway writes them); a hop that is no address at all is the
 * client as written (fail closed: it matches no allow-list and is never a
 * trusted proxy).
 */
export function clientIp (req: IncomingMessage, p: HeaderPolicy): string {
  const peer = normalizeIp(req.socket.remoteAddress ?? '')
  if (!p.trusted(peer)) return peer
  const xff = req.headers['x-forwarded-for']
  if (xff === undefined) return peer
  const hops = (Array.isArray(xff) ? xff.join(',') : xff).split(',')
  for (let i = hops.length - 1; i >= 0; i--) {
    const raw = hops[i].trim()
    if (raw === '') continue
    const ip = hopAddress(raw)
    if (ip === null) return raw.length > MAX_HOP ? raw.slice(0, MAX_HOP) : raw
    if (!p.trusted(ip)) return ip
  }
  return peer
}

/** How much of an unparseable X-Forwarded-For hop is kept as the client (logs, lockout). */
const MAX_HOP = 64
const V4_PORT = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/
const V6_BRACKETS = /^\[([0-9A-Fa-f:.]+)\](?::\d{1,5})?$/

/** An X-Forwarded-For hop → its address without a port (IPv4-mapped as IPv4), or null when it is none. */
export function hopAddress (hop: string): string | null {
  if (isIP(hop) !== 0) return normalizeIp(hop)
  let m = V4_PORT.exec(hop)
  if (m !== null) return isIP(m[1]) === 4 ? m[1] : null
  m = V6_BRACKETS.exec(hop)
  if (m !== null) return isIP(m[1]) === 6 ? normalizeIp(m[1]) : null
  return null
}

/** Whether the connection comes from one of server.trusted_proxies (the peer itself, not X-Forwarded-For). */
export function fromTrustedPeer (req: IncomingMessage, p: HeaderPolicy): boolean {
  return p.trusted(normalizeIp(req.socket.remoteAddress ?? ''))
}

/** Whether the client reached us over HTTPS: our own TLS, or a trusted proxy's `X-Forwarded-Proto: https`. */
export function isHttps (req: IncomingMessage, p: HeaderPolicy): boolean {
  if ((req.socket as TLSSocket).encrypted === true) return true
  if (!p.trusted(req.socket.remoteAddress ?? '')) return false
  const v = req.headers['x-forwarded-proto']
  return (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim().toLowerCase() === 'https'
}

/** Request headers as one flat list, `[name, value, name, value, …]`, names lowercase: what the upstream gets. */
export type HeaderList = Array<string | string[]>

/**
 * Request headers a forwarded request (not an upgrade) never carries: undici
 * refuses or sets them itself (it frames the body and owns the connection).
 * An upgrade keeps them: the handshake is relayed as it came.
 */
const NOT_FORWARDED = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'expect'])

/**
 * The headers the upstream gets, built in one pass over the request's
 * (which stay as the client sent them: a signature covers them), for every
 * proxied request, authenticated or not. Left out:
 * - the identity headers of both families (X-SVC-*, X-JMS-*) and X-CSRFToken;
 * - from a peer that is not in server.trusted_proxies, the forwarding headers
 *   (FORWARDING, any `X-Forwarded-*`, any `X-Auth-Request-*`);
 * - from any peer, the `_` spellings of all of these and of every header
 *   sidegate sets (CGI-style servers such as WSGI and ASGI read
 *   `X_SVC_User_Id` as `X-SVC-User-Id`; no proxy sends them);
 * - sidegate's own credentials (Authorization, session and CSRF cookies): a
 *   client that sends its token everywhere must not hand it to the upstream on a
 *   public path;
 * - unless `upgrade`, the hop-by-hop fields (NOT_FORWARDED).
 * Then added: `identity` (identityHeaders; none on a public path), and
 * X-Forwarded-For, -Proto and -Host (a trusted proxy's kept, its
 * X-Forwarded-For extended with the peer) and X-Request-Id.
 */
export function upstreamHeaders (
  req: IncomingMessage, p: HeaderPolicy, reqId: string, identity: readonly string[] | undefined, upgrade: boolean
): HeaderList {
  const h = req.headers
  const peer = normalizeIp(req.socket.remoteAddress ?? '')
  const trusted = p.trusted(peer)
  const out: HeaderList = []
  for (const name in h) {
    const v = h[name]
    if (v === undefined || p.injected.has(name)) continue
    if (name.includes('_')) {
      const dashed = name.replace(/_/g, '-')
      if (p.owned.has(dashed) || isForwarding(dashed)) continue
    } else if (isForwarding(name)) {
      // a trusted proxy's are kept; these three are set below
      if (!trusted || name === 'x-forwarded-for' || name === 'x-forwarded-proto' || name === 'x-forwarded-host') continue
    } else if (name === 'authorization' || name === 'cookie' || name === 'x-request-id' || (!upgrade && NOT_FORWARDED.has(name))) continue
    out.push(name, v)
  }
  const cookie = withoutCookies(h.cookie, p.credentialCookies)
  if (cookie !== undefined) out.push('cookie', cookie)
  if (identity !== undefined) for (let i = 0; i < identity.length; i++) out.push(identity[i])
  const prior = trusted ? h['x-forwarded-for'] : undefined
  out.push('x-forwarded-for', prior ? `${Array.isArray(prior) ? prior.join(', ') : prior}, ${peer}` : peer)
  const proto = trusted ? h['x-forwarded-proto'] : undefined
  out.push('x-forwarded-proto', proto || ((req.socket as TLSSocket).encrypted === true ? 'https' : 'http'))
  const host = (trusted ? h['x-forwarded-host'] : undefined) || h.host
  if (host) out.push('x-forwarded-host', host)
  out.push('x-request-id', reqId)
  return out
}

/** A HeaderList as a headers object (a WebSocket upgrade's, which http-proxy sends from req.headers). */
export function headerObject (list: HeaderList): Record<string, string | string[]> {
  const o: Record<string, string | string[]> = {}
  for (let i = 0; i < list.length; i += 2) o[list[i] as string] = list[i + 1]
  return o
}

/**
 * The identity headers of a resolved caller, lowercase name then value,
 * appended to `out`: what a forwarded request carries (upstreamHeaders) and
 * what a forward-auth decision answers with (src/pipeline/decide.ts), built
 * here once for both.
 */
export function identityHeaders (p: HeaderPolicy, id: Identity, orgId: string, requestId: string, out: string[]): void {
  out.push(
    p.userIdHeader,
    id.user.id,
    p.usernameHeader,
    encodeHeaderValue(id.user.username),
    p.orgHeader,
    orgId,
    p.authMethodHeader,
    id.method
  )
  // sessions and bearer tokens: what their sign-in was made with (machine credentials have no sign-in)
  if (id.factors !== undefined) out.push(p.authFactorsHeader, id.factors.join(','))
  const groups = p.groupsOf(id.user.groups)
  if (groups !== undefined) out.push(p.groupsHeader, groups)
  if (id.method === 'trusted_token' && id.workload !== null) out.push(p.workloadHeader, workloadHeader(id.workload))
  // identity.jwt: the signed token (src/forward/identity.ts; 503 when the signing keys cannot be read)
  if (p.identityToken !== undefined) out.push(p.identityHeader, p.identityToken(id, orgId, requestId, groups))
}

/**
 * A WebSocket handshake, or a decision request about one: Upgrade (Caddy
 * copies it), Sec-WebSocket-Key or `Sec-Fetch-Mode: websocket` (nginx drops
 * Upgrade from its subrequest but keeps these).
 */
export function isUpgradeOf (req: IncomingMessage): boolean {
  const h = req.headers
  return h.upgrade !== undefined || h['sec-websocket-key'] !== undefined || h['sec-fetch-mode'] === 'websocket'
}

/** The request a forward-auth decision is about: the one the proxy in front received. */
export interface OriginalRequest {
  method: string
  /** path and query as the client sent them */
  url: string
  /** the proxy family that asked (./proxies.ts); `path` for a peer not trusted (its headers are not read) */
  family: ProxyFamily
}

/** RFC 9110 token (an HTTP method), bounded */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/
/**
 * origin-form request target: "/" then the bytes Node's own parser accepts in
 * the request target of this process's Node (visible ASCII; bytes above 0x7f,
 * a raw UTF-8 byte read as latin1 like req.url, only where it accepts them),
 * so a decision takes or refuses a target as proxy mode does; bounded
 */
const ORIGIN_FORM = new RegExp(`^/[\\x21-\\x7e${parserAcceptedHighBytes()}]{0,8191}$`)

/** The bytes above 0x7f Node's HTTP parser takes in a request target, as a character class range ('' for none). */
function parserAcceptedHighBytes (): string {
  try {
    const { HTTPParser } = createRequire(import.meta.url)('_http_common') as { HTTPParser: any }
    const accepts = (b: number): boolean => {
      const p = new HTTPParser()
      p.initialize(HTTPParser.REQUEST, {})
      const r = p.execute(Buffer.concat([Buffer.from('GET /a'), Buffer.from([b]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]))
      p.close?.()
      return !(r instanceof Error)
    }
    // llhttp takes all of them or none (its lenient or strict URL table)
    return accepts(0x80) && accepts(0xc3) && accepts(0xff) ? '\\x80-\\xff' : ''
  } catch {
    return ''
  }
}

function single (v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

/**
 * The original request of a forward-auth decision (`/_sidegate/auth`):
 * - from a peer in server.trusted_proxies: its family is the first row of
 *   PROXY_FAMILIES whose URI header was sent, the path and query are that
 *   header's (X-Forwarded-Uri: Traefik, Caddy; X-Original-URI: nginx), the
 *   method the first row's method header sent (X-Forwarded-Method, X-Original-Method);
 * - else, and for whatever the proxy did not send, the request's own: its
 *   method, and its target with `ownPrefix` removed when the target goes on
 *   below it (Envoy's ext_authz appends the original path to its path_prefix:
 *   `/_sidegate/auth/api/v1/x?y` is about `/api/v1/x?y`).
 * From any other peer these headers are ignored. The method is upper-cased. A method that is not an HTTP
 * token or a URI that is not an origin-form target is 400 bad_request.
 */
export function originalRequest (req: IncomingMessage, p: HeaderPolicy, ownPrefix: string): OriginalRequest {
  const h = req.headers
  const trusted = fromTrustedPeer(req, p)
  const family = trusted ? familyOf(h) : PROXY_FAMILIES.path
  const methodSent = trusted ? single(sentMethod(h)) : undefined
  const sentUrl = family.uriHeader === null ? undefined : single(h[family.uriHeader])
  const own = req.url ?? '/'
  const method = methodSent?.trim() ?? req.method ?? 'GET'
  const url = sentUrl ?? (own.startsWith(ownPrefix + '/') ? own.slice(ownPrefix.length) : own)
  if (!METHOD.test(method)) throw E.badRequest('The original method (X-Forwarded-Method, X-Original-Method) is not an HTTP method.')
  if (!ORIGIN_FORM.test(url)) throw E.badRequest('The original URI (X-Forwarded-Uri, X-Original-URI) must be a path and query starting with "/".')
  // upper-cased: rules, CSRF and signatures see DELETE where a proxy passed on `delete`, which upstreams
  // such as Flask and Django upper-case (Node's own parser refuses a lower-case method in proxy mode)
  return { method: method.toUpperCase(), url, family }
}

/**
 * The Cookie header the upstream gets: the request's without sidegate's
 * session and CSRF cookies ('' when nothing is left). A forward-auth decision
 * answers it as its `Cookie` header, for the proxy to set in place of the client's.
 */
export function upstreamCookie (req: IncomingMessage, p: HeaderPolicy): string {
  return withoutCookies(req.headers.cookie, p.credentialCookies) ?? ''
}

/** Usernames may hold non-ASCII: percent-encode what a header cannot carry. */
function encodeHeaderValue (v: string): string {
  return /^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v)
}

/**
 * A browser navigating to a page: `Sec-Fetch-Mode: navigate` to a top-level
 * document (a frame gets no login page: it refuses to be framed), or, from a
 * client without Fetch Metadata, `Accept: text/html` and no `Sec-Fetch-*`
 * header at all. Never a request with an Authorization header, nor one whose
 * Accept names JSON and not HTML: API clients keep their 401.
 */
export function isNavigation (req: IncomingMessage): boolean {
  const h = req.headers
  if (h.authorization !== undefined) return false
  const accept = single(h.accept)?.toLowerCase() ?? ''
  const html = accept.includes('text/html')
  if (!html && accept.includes('json')) return false
  const mode = single(h['sec-fetch-mode'])
  if (mode !== undefined) {
    const dest = single(h['sec-fetch-dest'])
    return mode === 'navigate' && (dest === undefined || dest === 'document')
  }
  if (h['sec-fetch-site'] !== undefined || h['sec-fetch-dest'] !== undefined || h['sec-fetch-user'] !== undefined) return false
  return html
}

const FORWARDED_HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/

/**
 * The origin the client reached, as a trusted proxy says it (X-Forwarded-Proto
 * and -Host): `https://app.example.com`, or '' when the peer is not trusted or
 * sent no well-formed host. A redirect a proxy passes on from its decision
 * needs it: Traefik resolves a relative Location against sidegate's own address.
 */
export function forwardedOrigin (req: IncomingMessage, p: HeaderPolicy): string {
  if (!fromTrustedPeer(req, p)) return ''
  const host = single(req.headers['x-forwarded-host'])?.split(',')[0].trim()
  if (host === undefined || !FORWARDED_HOST.test(host)) return ''
  const proto = single(req.headers['x-forwarded-proto'])?.split(',')[0].trim().toLowerCase()
  return `${proto === 'https' ? 'https' : 'http'}://${host}`
}
