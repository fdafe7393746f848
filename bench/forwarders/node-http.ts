/**
 * Bench variant, not shipped (src/proxy.ts until the undici forwarder
 * replaced it): a lean node:http forwarder over a keep-alive agent for plain
 * requests (one request object, the headers copied once, no per-request
 * option parsing); WebSocket upgrades through http-proxy. Every call has an
 * error handler: refused → 502, no answer within upstream.timeout → 504,
 * client gone → nothing to answer, nothing leaked.
 *
 * A drop-in replacement for src/proxy.ts: `npm run bench:forwarders` compiles
 * it in place of dist/proxy.js; to run the proxy tests against it, copy it
 * over src/proxy.ts (see README, Performance).
 */
import http from 'node:http'
import https from 'node:https'
import type { Duplex } from 'node:stream'
import httpProxy from 'http-proxy'
import { E, type GatewayError } from './errors.js'

const TIMED_OUT = Symbol('sidegate.upstreamTimedOut')
type Req = http.IncomingMessage & { [TIMED_OUT]?: boolean }

export interface Forwarder {
  web (req: http.IncomingMessage, res: http.ServerResponse, onError: (err: GatewayError) => void): void
  ws (req: http.IncomingMessage, socket: Duplex, head: Buffer, onError: (err: GatewayError) => void): void
  close (): void
}

/**
 * Hop-by-hop headers (RFC 9110 7.6.1): they describe one connection, so they
 * are not copied from the upstream's response; node sets its own.
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'proxy-authenticate'])

export function createForwarder (target: string, timeoutSeconds: number): Forwarder {
  const url = new URL(target)
  const isHttps = url.protocol === 'https:'
  const agent = new (isHttps ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: 1024, maxFreeSockets: 256, scheduling: 'lifo' })
  const request = isHttps ? https.request : http.request
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  const port = url.port === '' ? (isHttps ? 443 : 80) : Number(url.port)
  // the target's path, if any, prefixes every forwarded path (as http-proxy's urlJoin did)
  const base = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '')
  const timeoutMs = timeoutSeconds * 1000
  const wsProxy = httpProxy.createProxyServer({ target, agent, xfwd: false, ws: true, secure: true })

  // WebSockets: the upstream must answer the upgrade within upstream.timeout
  // too; once upgraded, the connection lives as long as both sides keep it.
  wsProxy.on('proxyReqWs', (proxyReq, req, socket) => {
    let answered = false
    const timer = setTimeout(() => {
      (req as Req)[TIMED_OUT] = true
      proxyReq.destroy(new Error('upstream timeout'))
    }, timeoutMs)
    const done = (): void => { answered = true; clearTimeout(timer) }
    proxyReq.once('upgrade', done)
    proxyReq.once('response', done)
    proxyReq.once('close', () => clearTimeout(timer))
    // the client left before the upstream answered: end the upstream request
    socket.once('close', () => { if (!answered) { clearTimeout(timer); proxyReq.destroy() } })
  })
  // http-proxy emits this instead of calling back when the client itself went away.
  wsProxy.on('econnreset', () => {})
  // Safety net: an error with no per-call handler must never crash the process.
  wsProxy.on('error', () => {})

  const classify = (req: http.IncomingMessage): GatewayError =>
    (req as Req)[TIMED_OUT] === true ? E.upstreamTimeout() : E.upstreamUnavailable()

  function pathOf (reqUrl: string): string {
    // origin-form is the norm; an absolute-form target (`GET http://host/p`) forwards its path
    let p = reqUrl.charCodeAt(0) === 47 /* / */ ? reqUrl : pathFromAbsolute(reqUrl)
    if (base !== '') p = base + p
    return p
  }

  return {
    web (req, res, onError) {
      const h = req.headers
      // A request without Content-Length or Transfer-Encoding has no body (RFC 9112 6.3).
      const hasBody = h['content-length'] !== undefined || h['transfer-encoding'] !== undefined
      const up = request({
        host: hostname,
        port,
        method: req.method,
        path: pathOf(req.url ?? '/'),
        // the client's headers, already rewritten by the gateway (Host kept, as http-proxy did)
        headers: h,
        agent,
        ...(isHttps ? { servername: hostname, rejectUnauthorized: true } : {})
      })
      let done = false
      const fail = (): void => {
        if (done) return
        done = true
        if (res.headersSent || res.destroyed) { res.destroy(); return }
        onError(classify(req))
      }
      up.setTimeout(timeoutMs, () => {
        (req as Req)[TIMED_OUT] = true
        up.destroy(new Error('upstream timeout'))
      })
      up.on('error', fail)
      up.on('response', (ur) => {
        if (res.destroyed) { ur.resume(); up.destroy(); return }
        const raw = ur.rawHeaders
        const out: string[] = []
        for (let i = 0; i < raw.length; i += 2) {
          const name = raw[i].toLowerCase()
          // the gateway's X-Request-Id (already set on res) is the one the client gets
          if (!HOP_BY_HOP.has(name) && name !== 'x-request-id') out.push(raw[i], raw[i + 1])
        }
        if (ur.statusMessage) res.writeHead(ur.statusCode ?? 502, ur.statusMessage, out)
        else res.writeHead(ur.statusCode ?? 502, out)
        // The upstream dropped the connection mid-response: break the client's
        // response too, so it sees a truncated answer instead of waiting forever.
        ur.on('error', () => { done = true; res.destroy() })
        ur.once('close', () => { if (!ur.complete) { done = true; res.destroy() } })
        ur.pipe(res)
      })
      // Client gone before the answer was delivered: end the upstream request now.
      res.once('close', () => { if (!res.writableFinished) { done = true; up.destroy() } })
      if (hasBody) {
        req.pipe(up)
        // the client vanished halfway through its body
        req.once('aborted', () => { done = true; up.destroy() })
      } else {
        up.end()
      }
    },
    ws (req, socket, head, onError) {
      wsProxy.ws(req, socket, head, {}, () => {
        if (!socket.destroyed) onError(classify(req))
      })
    },
    close () {
      wsProxy.close()
      agent.destroy()
    }
  }
}

function pathFromAbsolute (reqUrl: string): string {
  try {
    const u = new URL(reqUrl)
    return u.pathname + u.search
  } catch {
    return '/' + reqUrl
  }
}
