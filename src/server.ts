/**
 * The gateway: one raw node:http server. A request flows one way:
 * route lookup → (public route) | auth → org → headers → built-in route or proxy.
 */
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { Config } from './config.js'
import { E, GatewayError } from './errors.js'
import { accessLogger, redactHeaders, redactUrl, type Logger } from './log.js'
import type { Store } from './store/types.js'
import { AuthPipeline, type Identity } from './auth/index.js'
import { requestedOrg, resolveOrg } from './org.js'
import { clientIp, headerPolicy, injectIdentity, isHttps, requestId, setForwarded, stripInjected } from './headers.js'
import { crossSiteCheck } from './origin.js'
import { createForwarder, type Forwarder } from './proxy.js'
import { rawErrorResponse, sendError } from './respond.js'
import { BEFORE_BODY } from './body.js'
import { redirect } from './routes/html.js'
import { accountApiRoutes, accountPageRoute } from './routes/account.js'
import { docsRoutes } from './routes/docs.js'
import { healthRoutes } from './routes/health.js'
import { HOME, loginRoutes } from './routes/login.js'
import { docsAssets, ownAssets } from './routes/static.js'
import { PasswordChecker } from './auth/passwords.js'
import { tokenRoute } from './routes/token.js'
import { userRoutes } from './routes/users.js'
import type { Route, RouteContext } from './routes/types.js'
import type { RequestObserver } from './metrics.js'

export interface GatewayOptions {
  config: Config
  store: Store
  log: Logger
  /** A further condition of /readyz (the first-start bootstrap); rejects while it does not hold. */
  ready?: () => Promise<void>
  /** Called once per finished request (Prometheus metrics). */
  metrics?: RequestObserver
}

export interface Gateway {
  server: http.Server
  auth: AuthPipeline
  /** sidegate's own routes, in lookup order */
  readonly routes: readonly Route[]
  listen (port?: number, host?: string): Promise<AddressInfo>
  /**
   * First step of a graceful stop: readiness turns false (/readyz 503) at once
   * while requests are still served for `seconds` (server.drain_delay), so a
   * load balancer or Kubernetes removes this endpoint before the listener closes.
   */
  drain (seconds?: number): Promise<void>
  /** Stop accepting, let in-flight requests finish for up to `graceSeconds`, then close. */
  shutdown (graceSeconds?: number): Promise<void>
  readonly draining: boolean
}

export function createGateway (opts: GatewayOptions): Gateway {
  const { config, store, log } = opts
  const auth = new AuthPipeline(store, config)
  const passwords = new PasswordChecker(store, config.auth.lockout)
  const policy = headerPolicy(config)
  const crossSite = crossSiteCheck(policy, config.session.cookie_secure)
  const orgHeader = config.names.orgHeader.toLowerCase()
  const forwarder: Forwarder | null = config.upstream.url ? createForwarder(config.upstream.url, config.upstream.timeout) : null
  const publicPaths = publicPathMatcher(config.upstream.public_paths)
  const bare = config.upstream.public_paths.filter((p) => !p.endsWith('/'))
  if (forwarder !== null && bare.length > 0) {
    log.warn({ entries: bare }, 'upstream.public_paths: an entry without a trailing slash covers that exact path and everything under it (/status: /status and /status/…); end it with / to cover only what is under it')
  }
  const access = accessLogger(log)
  let draining = false

  const assets = ownAssets()
  const all: Route[] = [
    ...healthRoutes(store, () => draining, opts.ready),
    tokenRoute(store, passwords, { ttl: config.auth.bearer.ttl, bodyLimit: config.server.body_limit, crossSite }),
    ...loginRoutes({ config, store, auth, passwords, assets, crossSite }),
    accountPageRoute(config, auth, assets),
    ...accountApiRoutes(store, config.server.body_limit, passwords),
    assets.route(),
    ...(config.docs.enabled ? docsRoutes(config, docsAssets()) : []),
    ...(forwarder === null ? userRoutes(store) : []),
    // without an upstream, the gateway's address leads a person to sign in
    ...(forwarder === null ? [homeRoute()] : [])
  ]
  // Lookup: exact paths first, then the longest matching prefix; several routes may share a path with different methods.
  const exact = new Map<string, Route[]>()
  const prefixes: Route[] = []
  for (const r of all) {
    if (r.prefix === true) prefixes.push(r)
    else exact.set(r.path, [...(exact.get(r.path) ?? []), r])
  }
  prefixes.sort((a, b) => b.path.length - a.path.length)

  /** The route for this request, null when sidegate does not serve the path; throws 405 for a known path and another method. */
  function findRoute (path: string, method: string): Route | null {
    let group = exact.get(path)
    if (group === undefined) {
      const p = prefixes.find((r) => path.startsWith(r.path))
      if (p === undefined) return null
      group = prefixes.filter((r) => r.path === p.path)
    }
    const r = group.find((x) => x.methods.includes(method))
    if (r === undefined) throw E.methodNotAllowed([...new Set(group.flatMap((x) => x.methods))].join(', '))
    return r
  }

  const isPublicUpstream = (path: string): boolean => publicPaths(path) && !hasDotSegment(path)

  async function identify (ctx: RouteContext, withOrg = true): Promise<void> {
    const identity: Identity = await auth.authenticate(ctx.req)
    ctx.identity = identity
    if (withOrg) ctx.orgId = await resolveOrg(store, identity.user, requestedOrg(ctx.req, orgHeader))
  }

  async function handle (ctx: Ctx): Promise<void> {
    const route = findRoute(ctx.path, ctx.req.method ?? '')
    if (route !== null) {
      if (!route.public) await identify(ctx, route.noOrg !== true)
      // 100 Continue when the route starts reading the body (readBody), after its own checks
      if (ctx.expectsContinue === true) (ctx.req as ContinueHook)[BEFORE_BODY] = () => proceed(ctx)
      await route.handle(ctx)
      return
    }
    if (forwarder === null) throw E.notFound()
    if (isPublicUpstream(ctx.path)) {
      stripInjected(ctx.req, policy)
    } else {
      await identify(ctx)
      injectIdentity(ctx.req, policy, ctx.identity!, ctx.orgId!)
    }
    setForwarded(ctx.req, policy, ctx.requestId)
    proceed(ctx)
    forwarder.web(ctx.req, ctx.res, (err) => fail(ctx, err))
  }

  /**
   * `Expect: 100-continue`: the client waits for `100 Continue` before it sends
   * the body. Sent once the request is routed and authenticated: before it is
   * forwarded, or when one of sidegate's routes starts reading the body (the
   * token endpoint's and /login's body is the credential), so a refused client
   * never uploads its body; Node would send it at once. Until then the answer
   * carries `Connection: close` (set in onRequest): answered without 100, the
   * client may or may not send the body, so the connection cannot be reused
   * (RFC 9110 10.1.1).
   */
  function proceed (ctx: Ctx): void {
    if (ctx.expectsContinue !== true) return
    ctx.expectsContinue = false
    if (ctx.res.headersSent || ctx.res.destroyed) return
    if (!draining) ctx.res.removeHeader('connection')
    ctx.res.writeContinue()
  }

  function fail (ctx: Ctx, err: unknown): void {
    const e = sendError(ctx.res, err)
    if (!(err instanceof GatewayError)) log.error({ err, reqId: ctx.requestId }, 'unhandled error')
    else if (e.status >= 500) log.warn({ reqId: ctx.requestId, code: e.code, cause: (err as { cause?: Error }).cause?.message }, e.detail)
    ;(ctx.res as ResWithCode).errorCode = e.code
  }

  function onRequest (req: http.IncomingMessage, res: http.ServerResponse, expectsContinue = false): void {
    const start = process.hrtime.bigint()
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const ctx: Ctx = {
      req,
      res,
      path: q === -1 ? url : url.slice(0, q),
      requestId: requestId(req),
      clientIp: clientIp(req, policy),
      https: isHttps(req, policy),
      expectsContinue
    }
    res.setHeader('x-request-id', ctx.requestId)
    if (draining || expectsContinue) res.setHeader('connection', 'close')
    // Query values and headers named like a credential are redacted (src/log.ts), only when debug is on.
    if (log.isLevelEnabled('debug')) log.debug({ reqId: ctx.requestId, req: { method: req.method, url: redactUrl(url), headers: redactHeaders(req.headers) }, ip: ctx.clientIp }, 'request received')
    res.once('close', () => {
      // a client that left before any answer was sent: 499 (as nginx), not Node's default 200
      const status = res.headersSent ? res.statusCode : 499
      opts.metrics?.request(status, ctx.identity?.method, (res as ResWithCode).errorCode, start)
      if (!access.isLevelEnabled('info')) return
      // only these fields: the access logger does not redact (no credential may be added here)
      access.info({
        reqId: ctx.requestId,
        method: req.method,
        path: ctx.path,
        status,
        ms: Number(process.hrtime.bigint() - start) / 1e6,
        userId: ctx.identity?.user.id,
        authMethod: ctx.identity?.method,
        code: (res as ResWithCode).errorCode,
        ip: ctx.clientIp,
        aborted: !res.writableFinished || undefined
      }, 'request')
    })
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node would answer plain text, we answer JSON.
    if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
      fail(ctx, E.badRequest('The Host header is required.'))
      return
    }
    handle(ctx).catch((err) => fail(ctx, err))
  }

  async function onUpgrade (req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const start = process.hrtime.bigint()
    socket.on('error', () => socket.destroy())
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const ctx = { req, path: q === -1 ? url : url.slice(0, q), requestId: requestId(req), clientIp: clientIp(req, policy) } as RouteContext
    try {
      if (forwarder === null || draining) throw forwarder === null ? E.notFound() : E.shuttingDown()
      if (isPublicUpstream(ctx.path)) stripInjected(req, policy)
      else {
        await identify(ctx)
        // Browsers send cookies with a cross-origin WebSocket handshake and no
        // CORS applies; SameSite does not help against a sibling sub-domain.
        // Header credentials cannot be sent by another site's page.
        if (ctx.identity!.method === 'session' && crossSite(req)) throw E.crossSite()
        injectIdentity(req, policy, ctx.identity!, ctx.orgId!)
      }
      setForwarded(req, policy, ctx.requestId)
      // counted like any request: 101 once the upstream switched protocols, else the error
      forwarder.ws(req, socket, head, (err) => rejectUpgrade(socket, err, start, ctx.identity?.method),
        () => opts.metrics?.request(101, ctx.identity?.method, undefined, start))
      log.info({ reqId: ctx.requestId, path: ctx.path, userId: ctx.identity?.user.id, authMethod: ctx.identity?.method }, 'websocket')
    } catch (err) {
      rejectUpgrade(socket, err, start, ctx.identity?.method)
    }
  }

  function rejectUpgrade (socket: Duplex, err: unknown, start: bigint, authMethod: string | undefined): void {
    const e = err instanceof GatewayError ? err : E.internal()
    opts.metrics?.request(e.status, authMethod, e.code, start)
    socket.end(rawErrorResponse(e))
  }

  const server = http.createServer({
    headersTimeout: config.server.headers_timeout * 1000,
    requestTimeout: config.server.request_timeout * 1000,
    // Node checks both timeouts only this often (default 30 s): check every
    // second so a slow client is cut off close to the configured time.
    connectionsCheckingInterval: 1000,
    keepAliveTimeout: 5000,
    maxHeaderSize: config.server.max_header_size,
    // a request without Host gets our JSON 400 (onRequest), not Node's plain-text one
    requireHostHeader: false
  }, onRequest)
  // `Expect: 100-continue`: Node would answer 100 before sidegate looked at the request (see proceed)
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => onRequest(req, res, true))
  // Node answers an unknown Expect with an empty 417 of its own: answer JSON like every other error
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    res.setHeader('x-request-id', requestId(req))
    ;(res as ResWithCode).errorCode = sendError(res, E.expectationFailed()).code
  })
  server.on('upgrade', (req, socket, head) => { onUpgrade(req, socket, head).catch(() => socket.destroy()) })
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable) { socket.destroy(); return }
    const e = err.code === 'HPE_HEADER_OVERFLOW' ? E.headersTooLarge() : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? E.requestTimeout() : E.malformedRequest()
    // Lingering close (as nginx does): the client may still be sending (oversized
    // headers). Closing with unread data makes the kernel send a reset, which can
    // destroy the answer before the client has read it; so read and discard until the
    // client closes or goes quiet for LINGER_MS, LINGER_MAX_MS at the most.
    socket.on('data', () => {})
    socket.once('end', () => socket.destroy())
    socket.once('timeout', () => socket.destroy())
    ;(socket as Socket).setTimeout?.(LINGER_MS)
    const cap = setTimeout(() => socket.destroy(), LINGER_MAX_MS).unref()
    socket.once('close', () => clearTimeout(cap)) // else the timer holds the socket for LINGER_MAX_MS
    socket.resume()
    socket.end(rawErrorResponse(e))
  })

  return {
    server,
    auth,
    routes: all,
    get draining () { return draining },
    listen (port = config.listen.port, host = config.listen.host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, host, () => {
          server.off('error', reject)
          resolve(server.address() as AddressInfo)
        })
      })
    },
    async drain (seconds = config.server.drain_delay) {
      draining = true
      if (seconds > 0) await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
    },
    async shutdown (graceSeconds = config.server.shutdown_grace) {
      draining = true
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeIdleConnections()
      const timer = setTimeout(() => server.closeAllConnections(), graceSeconds * 1000)
      await closed
      clearTimeout(timer)
      forwarder?.close()
    }
  }
}

type ResWithCode = http.ServerResponse & { errorCode?: string }
/** `expectsContinue`: the client sent `Expect: 100-continue` and has not been sent `100 Continue` yet. */
type Ctx = RouteContext & { expectsContinue?: boolean }
type ContinueHook = http.IncomingMessage & { [BEFORE_BODY]?: () => void }

/** A socket answered with a parse error is read and discarded until quiet this long… */
const LINGER_MS = 1000
/** …or this long in all. */
const LINGER_MAX_MS = 10_000

/**
 * upstream.public_paths, matched by whole segments: `/status` covers `/status`
 * and `/status/…` (not `/status-admin`), `/static/` covers `/static/…`. Case
 * and bytes as sent: `/Status` and `/status%2F…` are not covered.
 */
export function publicPathMatcher (entries: readonly string[]): (path: string) => boolean {
  const under = entries.map((e) => e.endsWith('/') ? e : e + '/')
  const exact = new Set(entries.filter((e) => !e.endsWith('/')))
  if (entries.length === 0) return () => false
  return (path) => exact.has(path) || under.some((p) => path.startsWith(p))
}

/**
 * A `.` or `..` path segment, also percent-encoded, after a backslash or with
 * `;` parameters: upstreams may resolve `/public/../api/` to `/api/`, so such a
 * path never counts as public and needs a credential like any other.
 */
function hasDotSegment (path: string): boolean {
  let p = path
  for (let i = 0; i < 3 && p.includes('%'); i++) {
    try { p = decodeURIComponent(p) } catch { return true }
  }
  return p.split(/[/\\]/).some((s) => { const seg = s.split(';')[0]; return seg === '.' || seg === '..' })
}

function homeRoute (): Route {
  return {
    methods: ['GET', 'HEAD'],
    path: '/',
    public: true,
    handle (ctx) { redirect(ctx.res, 302, HOME) }
  }
}
