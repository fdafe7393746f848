/**
 * Bench variant, not shipped: http-proxy-3 (a maintained TypeScript rewrite
 * of http-proxy) for plain requests and WebSocket upgrades, with the rules
 * src/proxy.ts keeps:
 * 502/504, upstream timeout, client abort, upstream reset mid-response,
 * hop-by-hop headers dropped, the gateway's X-Request-Id wins.
 *
 * A drop-in replacement for src/proxy.ts: `npm run bench:forwarders` compiles
 * it in place of dist/proxy.js; to run the proxy tests against it, copy it
 * over src/proxy.ts (see README, Performance).
 */
import http from 'node:http'
import https from 'node:https'
import type { Duplex } from 'node:stream'
import { createProxyServer } from 'http-proxy-3'
import { E, type GatewayError } from './errors.js'

const TIMED_OUT = Symbol('sidegate.upstreamTimedOut')
type Req = http.IncomingMessage & { [TIMED_OUT]?: boolean }

export interface Forwarder {
  web (req: http.IncomingMessage, res: http.ServerResponse, onError: (err: GatewayError) => void): void
  ws (req: http.IncomingMessage, socket: Duplex, head: Buffer, onError: (err: GatewayError) => void): void
  close (): void
}

// connection is set again by http-proxy-3's own pass (keep-alive, as node would)
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'proxy-authenticate', 'x-request-id']

export function createForwarder (target: string, timeoutSeconds: number): Forwarder {
  const isHttps = target.startsWith('https:')
  const agent = new (isHttps ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: 1024, maxFreeSockets: 256, scheduling: 'lifo' })
  const proxy = createProxyServer({ target, agent, xfwd: false, ws: true, secure: true })
  const timeoutMs = timeoutSeconds * 1000

  proxy.on('proxyReq', (proxyReq, req, res) => {
    proxyReq.setTimeout(timeoutMs, () => {
      (req as Req)[TIMED_OUT] = true
      proxyReq.destroy(new Error('upstream timeout'))
    })
    // Client gone before the answer was delivered: end the upstream request now.
    const onClose = (): void => { if (!res.writableFinished) proxyReq.destroy() }
    if (res.closed) onClose()
    else res.once('close', onClose)
  })
  proxy.on('proxyRes', (proxyRes, _req, res) => {
    for (const h of HOP_BY_HOP) delete proxyRes.headers[h]
    // The upstream dropped the connection mid-response: break the client's response too.
    proxyRes.on('error', () => res.destroy())
    proxyRes.once('close', () => { if (!proxyRes.complete) res.destroy() })
  })
  proxy.on('proxyReqWs', (proxyReq, req, socket) => {
    let answered = false
    const timer = setTimeout(() => {
      (req as Req)[TIMED_OUT] = true
      proxyReq.destroy(new Error('upstream timeout'))
    }, timeoutMs)
    const done = (): void => { answered = true; clearTimeout(timer) }
    proxyReq.once('upgrade', done)
    proxyReq.once('response', done)
    proxyReq.once('close', () => clearTimeout(timer))
    socket.once('close', () => { if (!answered) { clearTimeout(timer); proxyReq.destroy() } })
  })
  proxy.on('econnreset', () => {})
  proxy.on('error', () => {})

  const classify = (req: http.IncomingMessage): GatewayError =>
    (req as Req)[TIMED_OUT] === true ? E.upstreamTimeout() : E.upstreamUnavailable()

  return {
    web (req, res, onError) {
      proxy.web(req, res, {}, () => {
        if (res.headersSent || res.destroyed) { res.destroy(); return }
        onError(classify(req))
      })
    },
    ws (req, socket, head, onError) {
      proxy.ws(req, socket, head, {}, () => {
        if (!socket.destroyed) onError(classify(req))
      })
    },
    close () {
      proxy.close()
      agent.destroy()
    }
  }
}
