/**
 * The gateway's listener: one raw node:http server with its timeouts, the
 * answers to requests Node could not parse, and the graceful stop. What
 * happens to a request is src/pipeline/pipeline.ts (the chains of
 * src/pipeline/chains.ts); sidegate's own routes are src/routes/index.ts.
 */
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { Auditor } from '../observability/audit.js'
import { Authenticators } from '../auth/index.js'
import { configWarningList, type Config } from '../config/index.js'
import { E } from '../errors.js'
import { headerPolicy } from './headers.js'
import { requestId } from '../http/request-id.js'
import { pathOf } from '../http/query.js'
import { adoptOriginForm } from '../http/target.js'
import { IdentitySigner } from '../forward/identity.js'
import type { Logger } from '../observability/log.js'
import type { RequestObserver } from '../observability/metrics.js'
import { crossSiteCheck } from './origin.js'
import { sessionScope } from './sso.js'
import { createPipeline, type Pipeline, type ResWithCode } from './pipeline.js'
import { createForwarder } from '../forward/proxy.js'
import { rawErrorResponse, sendError } from '../respond.js'
import { createRouter, type Route, type Router } from '../routes/index.js'
import { UnusedKeys } from '../admin/unused-keys.js'
import type { Store } from '../store/types.js'
import type { Tracer } from '../observability/tracing.js'
import { logHandshakeFailures, serverTlsOptions, TlsFiles } from './tls.js'
import { Directories } from '../auth/ldap/index.js'
import { OidcProviders } from '../auth/oidc/index.js'

export interface GatewayOptions {
  config: Config
  store: Store
  log: Logger
  /** A further condition of /readyz (the first-start bootstrap); rejects while it does not hold. */
  ready?: () => Promise<void>
  /** Called once per finished request (Prometheus metrics). */
  metrics?: RequestObserver
  /** tracing on (src/observability/otel.ts); absent or null: off */
  tracer?: Tracer | null
  /** The audit trail; default: one made from config.audit, on `store` and `log`. */
  audit?: Auditor
}

export interface Gateway {
  server: http.Server
  /** the authentication pipeline of the config in force */
  readonly auth: Authenticators
  /** identity.jwt's signer; null when disabled */
  identity: IdentitySigner | null
  /** sidegate's own routes, in lookup order */
  readonly routes: readonly Route[]
  /** The config in force: the start's, or the last one a live reload applied. */
  readonly config: Config
  /**
   * A live reload (src/app/reload.ts): requests from now on are handled under
   * `next`. Only keys the schema marks `live` may differ from the config in
   * force (src/config/live.ts); the caller checks that. What is derived from
   * the config (the authenticators, the header policy, the routes, the public
   * paths, the rate limiter) is built anew and swapped in as one reference;
   * requests already in flight finish under the config they started with.
   */
  apply (next: Config): void
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

/** What is built from the config for the request path: swapped whole by a live reload. */
interface Handlers {
  auth: Authenticators
  router: Router
  pipeline: Pipeline
}

export function createGateway (opts: GatewayOptions): Gateway {
  const { config, store, log } = opts
  const identity = config.identity.jwt.enabled
    ? new IdentitySigner(store, config.identity.jwt, log, { cacheMax: config.auth.cache.max })
    : null
  identity?.start()
  // auth.keys.disable_after: off (no timer) at 0
  const unusedKeys = new UnusedKeys(store, log, {
    days: config.auth.keys.disable_after,
    intervalSeconds: config.auth.keys.check_interval,
    onPass: opts.metrics?.unusedKeysPass
  })
  unusedKeys.start()
  // ready only once the signing keys are read (or created, on the first start)
  const ready = identity === null ? opts.ready : async () => { await opts.ready?.(); await identity.ready() }
  /** the config in force (a live reload replaces it, with `current`) */
  let inForce = config
  // upstream.url is fixed for the process; upstream.timeout is read per request
  const forwarder = config.upstream.url ? createForwarder(config.upstream.url, () => inForce.upstream.timeout) : null
  let draining = false
  const isDraining = (): boolean => draining
  const audit = opts.audit ??
    new Auditor({ config: config.audit, log, store, onStreamError: opts.metrics?.auditStreamError })
  const directories = config.sign_in.ldap.length === 0 ? null : new Directories(config.sign_in, log, store, audit)
  const oidc = new OidcProviders(store, audit, log)
  const build = (c: Config): Handlers => {
    for (const w of configWarningList(c)) {
      log.warn(
        w.entries.length === 0 ? { warning: w.code } : { warning: w.code, entries: w.entries }, w.msg
      )
    }
    const auth = new Authenticators(store, c, log)
    const policy = headerPolicy(
      c, identity === null ? undefined : (id, orgId, reqId, groups) => identity.token(id, orgId, reqId, groups)
    )
    const crossSite = crossSiteCheck(policy, c.session.cookie_secure)
    const sso = sessionScope(c.session.cookies, policy)
    oidc.update(c.sign_in.oidc)
    const router = createRouter({
      config: c, store, auth, crossSite, sso, draining: isDraining, ready, identity, audit, directories, oidc
    })
    const pipeline = createPipeline({
      config: c,
      store,
      log,
      auth,
      router,
      policy,
      crossSite,
      sso,
      forwarder,
      draining: isDraining,
      metrics: opts.metrics,
      identity,
      tracer: opts.tracer,
      audit
    })
    return { auth, router, pipeline }
  }
  let current = build(config)

  const serverOptions: http.ServerOptions = {
    headersTimeout: config.server.headers_timeout * 1000,
    requestTimeout: config.server.request_timeout * 1000,
    // Node checks both timeouts only this often (default 30 s): check every
    // second so a slow client is cut off close to the configured time.
    connectionsCheckingInterval: 1000,
    // longer than the idle timeout of the proxy or load balancer in front (nginx and
    // most load balancers: 60 s): else it reuses a connection sidegate is just closing,
    // and a POST it cannot retry fails with 502. Node 20 counts headers_timeout from a
    // request's first byte, not from the idle time before it: it stays short.
    keepAliveTimeout: config.server.keep_alive_timeout * 1000,
    maxHeaderSize: config.server.max_header_size,
    // a request without Host gets our JSON 400 (src/pipeline/receive.ts), not Node's plain-text one
    requireHostHeader: false
  }
  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => current.pipeline.request(req, res)
  // listen.tls: HTTPS (src/http/tls.ts), its files watched; else plain HTTP, nothing more per request
  const tlsOptions = config.listen.tls.cert_file === null ? null : serverTlsOptions(config.listen.tls)
  const server = tlsOptions === null
    ? http.createServer(serverOptions, handle)
    : https.createServer({ ...serverOptions, ...tlsOptions }, handle) as unknown as http.Server
  const tlsServer = server as unknown as https.Server
  const tlsFiles = tlsOptions === null ? null : new TlsFiles(tlsServer, config.listen.tls, tlsOptions, log)
  if (tlsOptions !== null) logHandshakeFailures(tlsServer, log)
  // `Expect: 100-continue`: Node would answer 100 before sidegate looked at the request (receive.ts, proceed)
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => current.pipeline.request(req, res, true))
  // Node answers an unknown Expect with an empty 417 of its own: answer JSON like every other error
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    res.setHeader('x-request-id', requestId(req))
    ;(res as ResWithCode).errorCode = sendError(res, E.expectationFailed()).code
  })
  server.on('upgrade', (req, socket, head) => {
    // a decision about a WebSocket handshake (Caddy copies Upgrade onto it) is a decision like any other;
    // a target that is not origin-form after adoptOriginForm gets receive's 400 as a plain answer
    if (!adoptOriginForm(req) || current.router.find(pathOf(req.url ?? '/'), req.method ?? '')?.auth === 'decision') {
      answerAsRequest(req, socket, current.pipeline)
    } else current.pipeline.upgrade(req, socket, head).catch(() => socket.destroy())
  })
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
    get auth () { return current.auth },
    identity,
    get routes () { return current.router.routes },
    get config () { return inForce },
    apply (next: Config) {
      const built = build(next)
      server.headersTimeout = next.server.headers_timeout * 1000
      server.requestTimeout = next.server.request_timeout * 1000
      server.keepAliveTimeout = next.server.keep_alive_timeout * 1000
      inForce = next
      current = built
      tlsFiles?.reload('a config reload') // SIGHUP reads the certificate files again too
    },
    get draining () { return draining },
    async listen (port = config.listen.port, host = config.listen.host) {
      try {
        return await bind(server, port, host)
      } catch (err) {
        // the shipped default `::` on a host without IPv6: IPv4 only, said once; a `::` set on purpose
        // fails as any address
        const code = (err as NodeJS.ErrnoException).code
        if (host !== '::' || config.sources['listen.host'] !== 'default' ||
          (code !== 'EAFNOSUPPORT' && code !== 'EADDRNOTAVAIL')) throw err
        log.warn({ host, code }, 'no IPv6 on this host: listening on 0.0.0.0 (IPv4) instead of the default ::')
        return await bind(server, port, '0.0.0.0')
      }
    },
    async drain (seconds = inForce.server.drain_delay) {
      draining = true
      if (seconds > 0) await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
    },
    async shutdown (graceSeconds = inForce.server.shutdown_grace) {
      draining = true
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeIdleConnections()
      const timer = setTimeout(() => server.closeAllConnections(), graceSeconds * 1000)
      tlsFiles?.close()
      await closed
      clearTimeout(timer)
      forwarder?.close()
      identity?.close()
      await unusedKeys.close()
    }
  }
}

/** server.listen as a promise: the bound address, or the listen error. */
function bind (server: http.Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve(server.address() as AddressInfo)
    })
  })
}

/** An upgrade request answered with a plain HTTP answer on its socket, which then closes (no protocol switch). */
function answerAsRequest (req: http.IncomingMessage, socket: Duplex, pipeline: Pipeline): void {
  socket.on('error', () => socket.destroy())
  const res = new http.ServerResponse(req)
  res.shouldKeepAlive = false
  res.assignSocket(socket as Socket)
  res.once('finish', () => { res.detachSocket(socket as Socket); socket.end() })
  pipeline.request(req, res)
}

/** A socket answered with a parse error is read and discarded until quiet this long… */
const LINGER_MS = 1000
/** …or this long in all. */
const LINGER_MAX_MS = 10_000
