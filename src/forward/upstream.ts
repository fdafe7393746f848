/**
 * What every forwarder shares (src/forward/proxy.ts, and the variants measured in
 * bench/forwarders/): the Forwarder contract, the error a request gets when
 * the upstream fails it, the hop-by-hop headers, the forwarded path, and
 * WebSocket upgrades through http-proxy.
 */
import http from 'node:http'
import https from 'node:https'
import type { Duplex } from 'node:stream'
import httpProxy from 'http-proxy'
import { E, type GatewayError } from '../errors.js'
import type { UpstreamCall } from '../observability/tracing.js'
import type { HeaderList } from '../pipeline/headers.js'

export interface Forwarder {
  /**
   * `headers`: what the upstream gets (src/pipeline/headers.ts upstreamHeaders, no hop-by-hop field),
   * not req.headers. The response carries `requestId` as X-Request-Id, never
   * the upstream's. `call`: tracing's span of this upstream call
   * (src/observability/tracing.ts), ended when the upstream's answer is
   * complete or fails.
   */
  web (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    headers: HeaderList,
    requestId: string,
    onError: (err: GatewayError) => void,
    call?: UpstreamCall
  ): void
  /** `onUpgrade`: the upstream accepted the upgrade (101). */
  ws (
    req: http.IncomingMessage,
    socket: Duplex,
    head: Buffer,
    onError: (err: GatewayError) => void,
    onUpgrade?: () => void
  ): void
  close (): void
}

const TIMED_OUT = Symbol('sidegate.upstreamTimedOut')
const ON_UPGRADE = Symbol('sidegate.onUpgrade')
type Req = http.IncomingMessage & { [TIMED_OUT]?: boolean, [ON_UPGRADE]?: () => void }

/** The upstream did not answer `req` within upstream.timeout. */
export function markTimedOut (req: http.IncomingMessage): void { (req as Req)[TIMED_OUT] = true }

/** 504 upstream_timeout after markTimedOut, else 502 upstream_unavailable. */
export function upstreamError (req: http.IncomingMessage): GatewayError {
  return (req as Req)[TIMED_OUT] === true ? E.upstreamTimeout() : E.upstreamUnavailable()
}

/**
 * Hop-by-hop headers (RFC 9110 7.6.1): they describe one connection, so they
 * are not copied from the upstream's response; node sets its own.
 */
export const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'proxy-authenticate'])

/**
 * The upstream path of a request: its target as sent, which receive made
 * origin-form (src/http/target.ts), so the upstream gets the string the
 * access rules decided on; `OPTIONS *` goes on as `/*`, the path the rules
 * saw. The target's own path, if any, prefixes it (as http-proxy's urlJoin did).
 */
export function pathMapper (target: URL): (reqUrl: string) => string {
  const base = target.pathname === '/' ? '' : target.pathname.replace(/\/+$/, '')
  return (reqUrl) => {
    const p = reqUrl.charCodeAt(0) === 47 /* / */ ? reqUrl : '/' + reqUrl
    return base === '' ? p : base + p
  }
}

/**
 * WebSocket upgrades through http-proxy over a keep-alive agent. The upstream
 * must answer the upgrade within upstream.timeout (504 otherwise); once
 * upgraded, the connection lives as long as both sides keep it.
 */
export function createUpgrader (target: string, timeout: number | (() => number)): Pick<Forwarder, 'ws' | 'close'> {
  const timeoutMs = typeof timeout === 'function' ? timeout : () => timeout
  const agent = new (target.startsWith('https:') ? https.Agent : http.Agent)({
    keepAlive: true,
    maxSockets: 1024,
    maxFreeSockets: 256,
    scheduling: 'lifo'
  })
  const proxy = httpProxy.createProxyServer({ target, agent, xfwd: false, ws: true, secure: true })
  // http-proxy joins the target's path and req.url with slashes folded (and url.parse turns `\` into `/`):
  // the upstream gets the target as sent, the string the rules decided on, as for every other request
  const pathOf = pathMapper(new URL(target))
  proxy.on('proxyReqWs', (proxyReq, req, socket) => {
    proxyReq.path = pathOf(req.url ?? '/')
    let answered = false
    const timer = setTimeout(() => {
      markTimedOut(req)
      proxyReq.destroy(new Error('upstream timeout'))
    }, timeoutMs())
    const done = (): void => { answered = true; clearTimeout(timer) }
    proxyReq.once('upgrade', () => { done(); (req as Req)[ON_UPGRADE]?.() })
    proxyReq.once('response', done)
    proxyReq.once('close', () => clearTimeout(timer))
    // the client left before the upstream answered: end the upstream request
    socket.once('close', () => { if (!answered) { clearTimeout(timer); proxyReq.destroy() } })
  })
  // http-proxy emits this instead of calling back when the client itself went away.
  proxy.on('econnreset', () => {})
  // Safety net: an error with no per-call handler must never crash the process.
  proxy.on('error', () => {})
  return {
    ws (req, socket, head, onError, onUpgrade) {
      (req as Req)[ON_UPGRADE] = onUpgrade
      proxy.ws(req, socket, head, {}, () => {
        if (!socket.destroyed) onError(upstreamError(req))
      })
    },
    close () {
      proxy.close()
      agent.destroy()
    }
  }
}
