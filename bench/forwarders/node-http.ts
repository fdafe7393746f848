/**
 * Bench variant, not shipped (src/forward/proxy.ts until the undici forwarder
 * replaced it): a lean node:http forwarder over a keep-alive agent for plain
 * requests (one request object, the headers copied once, no per-request
 * option parsing); WebSocket upgrades as src/forward/proxy.ts (src/forward/upstream.ts). Every call has an
 * error handler: refused → 502, no answer within upstream.timeout → 504,
 * client gone → nothing to answer, nothing leaked.
 *
 * A drop-in replacement for src/forward/proxy.ts: `npm run bench:forwarders` compiles
 * it in place of dist/forward/proxy.js; to run the proxy tests against it, copy it
 * over src/forward/proxy.ts (see README, Performance).
 */
import http from 'node:http'
import https from 'node:https'
import { HOP_BY_HOP, createUpgrader, markTimedOut, pathMapper, upstreamError, type Forwarder } from './upstream.js'

export type { Forwarder }

export function createForwarder (target: string, timeoutSeconds: number): Forwarder {
  const url = new URL(target)
  const isHttps = url.protocol === 'https:'
  const agent = new (isHttps ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: 1024, maxFreeSockets: 256, scheduling: 'lifo' })
  const request = isHttps ? https.request : http.request
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  const port = url.port === '' ? (isHttps ? 443 : 80) : Number(url.port)
  const pathOf = pathMapper(url)
  const timeoutMs = timeoutSeconds * 1000
  const upgrader = createUpgrader(target, timeoutMs)

  return {
    web (req, res, list, requestId, onError) {
      const h = req.headers
      const headers: Record<string, string | string[]> = {}
      for (let i = 0; i < list.length; i += 2) headers[list[i] as string] = list[i + 1]
      // A request without Content-Length or Transfer-Encoding has no body (RFC 9112 6.3).
      const hasBody = h['content-length'] !== undefined || h['transfer-encoding'] !== undefined
      const up = request({
        host: hostname,
        port,
        method: req.method,
        path: pathOf(req.url ?? '/'),
        // the headers the gateway built (Host kept, as http-proxy did)
        headers,
        agent,
        ...(isHttps ? { servername: hostname, rejectUnauthorized: true } : {})
      })
      let done = false
      const fail = (): void => {
        if (done) return
        done = true
        if (res.headersSent || res.destroyed) { res.destroy(); return }
        onError(upstreamError(req))
      }
      up.setTimeout(timeoutMs, () => {
        markTimedOut(req)
        up.destroy(new Error('upstream timeout'))
      })
      up.on('error', fail)
      up.on('response', (ur) => {
        if (res.destroyed) { ur.resume(); up.destroy(); return }
        const raw = ur.rawHeaders
        const out: string[] = []
        for (let i = 0; i < raw.length; i += 2) {
          const name = raw[i].toLowerCase()
          // the gateway's X-Request-Id is the one the client gets
          if (!HOP_BY_HOP.has(name) && name !== 'x-request-id') out.push(raw[i], raw[i + 1])
        }
        out.push('X-Request-Id', requestId)
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
    ws: upgrader.ws,
    close () {
      upgrader.close()
      agent.destroy()
    }
  }
}
