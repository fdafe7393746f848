/**
 * Forwarding to the upstream with http-proxy over a keep-alive agent. Every
 * call has an error handler: refused → 502, no answer within
 * upstream.timeout → 504, client gone → nothing to answer, nothing leaked.
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

export function createForwarder (target: string, timeoutSeconds: number): Forwarder {
  const isHttps = target.startsWith('https:')
  const agent = new (isHttps ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: 1024, maxFreeSockets: 256, scheduling: 'lifo' })
  const proxy = httpProxy.createProxyServer({ target, agent, xfwd: false, ws: true, secure: true })
  const timeoutMs = timeoutSeconds * 1000

  proxy.on('proxyReq', (proxyReq, req, res) => {
    proxyReq.setTimeout(timeoutMs, () => {
      (req as Req)[TIMED_OUT] = true
      proxyReq.destroy(new Error('upstream timeout'))
    })
    // Client gone before the answer was delivered: end the upstream request now.
    // http-proxy only reacts to 'aborted', which a request whose body was fully
    // read never emits, so the upstream socket was held until the timeout.
    const onClose = (): void => { if (!res.writableFinished) proxyReq.destroy() }
    if (res.closed) onClose()
    else res.once('close', onClose)
  })
  // WebSockets: the upstream must answer the upgrade within upstream.timeout
  // too; once upgraded, the connection lives as long as both sides keep it.
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
    // the client left before the upstream answered: end the upstream request
    socket.once('close', () => { if (!answered) { clearTimeout(timer); proxyReq.destroy() } })
  })
  // The gateway's X-Request-Id (set on the response before proxying) is the one
  // the client gets: an upstream's own id does not replace it.
  proxy.on('proxyRes', (proxyRes, _req, res) => {
    delete proxyRes.headers['x-request-id']
    // The upstream dropped the connection mid-response: http-proxy does not
    // notice (it only pipes), so the client would wait forever for the rest.
    // Break the client's response too: it sees a truncated answer and can retry.
    proxyRes.once('close', () => { if (!proxyRes.complete) res.destroy() })
  })
  // http-proxy emits this instead of calling back when the client itself went away.
  proxy.on('econnreset', () => {})
  // Safety net: an error with no per-call handler must never crash the process.
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
