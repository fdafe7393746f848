/**
 * Bench helper, not shipped: the forwarder of the http-proxy variants
 * (http-proxy.ts, http-proxy-3.ts), which differ only in the library's
 * createProxyServer. Plain requests through it, with the rules src/forward/proxy.ts
 * keeps: 502/504, upstream timeout, client abort, upstream reset
 * mid-response, hop-by-hop headers dropped, the gateway's X-Request-Id wins.
 * WebSocket upgrades as in src/forward/proxy.ts (src/forward/upstream.ts).
 */
import http from 'node:http'
import https from 'node:https'
import { HOP_BY_HOP, createUpgrader, markTimedOut, upstreamError, type Forwarder } from './upstream.js'

/** the part of http-proxy's (and http-proxy-3's) server used here */
interface ProxyServer {
  on (event: string, listener: (...args: any[]) => void): unknown
  web (req: http.IncomingMessage, res: http.ServerResponse, options: object, callback: (err: Error) => void): void
  close (): void
}
export type CreateProxyServer = (
  options: { target: string, agent: http.Agent, xfwd: boolean, secure: boolean }
) => ProxyServer

export function httpProxyForwarder (createProxyServer: CreateProxyServer): (
  target: string, timeoutSeconds: number
) => Forwarder {
  return (target, timeoutSeconds) => {
    const agent = new (target.startsWith('https:') ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: 1024, maxFreeSockets: 256, scheduling: 'lifo' })
    const proxy = createProxyServer({ target, agent, xfwd: false, secure: true })
    const timeoutMs = timeoutSeconds * 1000
    const upgrader = createUpgrader(target, timeoutMs)

    proxy.on('proxyReq', (proxyReq: http.ClientRequest, req: http.IncomingMessage, res: http.ServerResponse) => {
      proxyReq.setTimeout(timeoutMs, () => {
        markTimedOut(req)
        proxyReq.destroy(new Error('upstream timeout'))
      })
      // Client gone before the answer was delivered: end the upstream request now.
      const onClose = (): void => { if (!res.writableFinished) proxyReq.destroy() }
      if (res.closed) onClose()
      else res.once('close', onClose)
    })
    proxy.on('proxyRes', (proxyRes: http.IncomingMessage, _req: http.IncomingMessage, res: http.ServerResponse) => {
      // connection is set again by the library's own pass (keep-alive, as node would)
      for (const h of HOP_BY_HOP) delete proxyRes.headers[h]
      delete proxyRes.headers['x-request-id']
      // The upstream dropped the connection mid-response: break the client's response too.
      proxyRes.on('error', () => res.destroy())
      proxyRes.once('close', () => { if (!proxyRes.complete) res.destroy() })
    })
    proxy.on('econnreset', () => {})
    proxy.on('error', () => {})

    return {
      web (req, res, list, requestId, onError) {
        // http-proxy sends req.headers: the ones the gateway built
        const headers: Record<string, string | string[]> = {}
        for (let i = 0; i < list.length; i += 2) headers[list[i] as string] = list[i + 1]
        req.headers = headers
        res.setHeader('x-request-id', requestId)
        proxy.web(req, res, {}, () => {
          if (res.headersSent || res.destroyed) { res.destroy(); return }
          onError(upstreamError(req))
        })
      },
      ws: upgrader.ws,
      close () {
        upgrader.close()
        proxy.close()
        agent.destroy()
      }
    }
  }
}
