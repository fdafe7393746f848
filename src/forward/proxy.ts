/**
 * Forwarding to the upstream. Plain requests go through an undici Pool
 * (keep-alive, pipelining 1) with a low-level `dispatch` handler that writes
 * the upstream's raw header buffers and body chunks straight to the client's
 * response (no Readable in between); WebSocket upgrades through http-proxy.
 * Every call has an error handler: refused → 502, no answer within
 * upstream.timeout → 504 (headersTimeout; bodyTimeout between body chunks),
 * client gone → the upstream request is aborted, nothing leaked; the upstream
 * dropping the connection mid-response breaks the client's response too;
 * hop-by-hop headers are dropped and the gateway's X-Request-Id wins.
 *
 * `npm run bench:forwarders` measured it against the node:http forwarder it
 * replaced, http-proxy and http-proxy-3 behind the same gateway (the others
 * are in bench/forwarders/; see docs/performance.md).
 */
import { Pool, type Dispatcher } from 'undici'
import { bufferedBody } from '../body.js'
import { HOP_BY_HOP, createUpgrader, markTimedOut, pathMapper, upstreamError, type Forwarder } from './upstream.js'

export type { Forwarder }

/** the legacy dispatch handler undici 7 still calls directly (the new API is wrapped into it) */
interface RawHandler {
  onConnect (abort: (err?: Error) => void): void
  onHeaders (statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean
  onData (chunk: Buffer): boolean
  onComplete (trailers: Buffer[] | null): void
  onError (err: Error & { code?: string }): void
}

/** a response header not passed on: hop-by-hop, or the upstream's X-Request-Id (the gateway's wins) */
function isDropped (name: string): boolean {
  // most names are neither: a length and first-letter check spares the lowercase copy
  const c = name.charCodeAt(0) | 0x20
  if (c !== 0x63 /* c */ && c !== 0x6b /* k */ && c !== 0x70 /* p */ &&
    c !== 0x74 /* t */ && c !== 0x75 /* u */ && c !== 0x78 /* x */) return false
  const lower = name.toLowerCase()
  return HOP_BY_HOP.has(lower) || lower === 'x-request-id'
}

/** `timeoutSeconds`: upstream.timeout, or a function that reads it per request (a live reload changes it). */
export function createForwarder (target: string, timeoutSeconds: number | (() => number)): Forwarder {
  const url = new URL(target)
  const isHttps = url.protocol === 'https:'
  const timeoutOf = typeof timeoutSeconds === 'function' ? () => timeoutSeconds() * 1000 : () => timeoutSeconds * 1000
  const timeoutMs = timeoutOf()
  const pool = new Pool(url.origin, {
    connections: 1024,
    pipelining: 1,
    // After a client abort undici closes that connection and opens a fresh
    // idle one (the aborted request is requeued, then skipped); idle
    // connections close after this, below the upstream's own keep-alive
    // timeout (node's default is 5 s), so none is ever reused as it closes.
    keepAliveTimeout: 2000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: isHttps ? { rejectUnauthorized: true, servername: url.hostname } : undefined
  })
  const pathOf = pathMapper(url)
  const upgrader = createUpgrader(target, timeoutOf)

  return {
    web (req, res, headers, requestId, onError, call) {
      const h = req.headers
      const hasBody = h['content-length'] !== undefined || h['transfer-encoding'] !== undefined
      let done = false
      let abort: ((err?: Error) => void) | null = null
      let gone = false
      const cancel = (): void => {
        if (done) return
        done = true
        gone = true
        abort?.(new Error('client gone'))
      }
      const handler: RawHandler = {
        onConnect (ab) {
          abort = ab
          if (gone) ab(new Error('client gone'))
        },
        onHeaders (statusCode, raw, resume, statusText) {
          if (res.destroyed) { cancel(); return false }
          // One flat list, the upstream's names and order kept (every copy of a repeated
          // name: two Set-Cookie stay two), then the gateway's X-Request-Id: on a response
          // with no header set before (the common case), Node writes the head from this list
          // in one pass. Where the pipeline did set some (RateLimit fields, Connection: close),
          // Node replaces those of the same name and appends the rest, repeated names included.
          const out: string[] = []
          for (let i = 0; i < raw.length; i += 2) {
            const name = raw[i].toString('latin1')
            if (isDropped(name)) continue
            out.push(name, raw[i + 1].toString('latin1'))
          }
          out.push('X-Request-Id', requestId)
          if (statusText) res.writeHead(statusCode, statusText, out)
          else res.writeHead(statusCode, out)
          res.on('drain', resume)
          return true
        },
        onData (chunk) {
          return res.write(chunk)
        },
        onComplete () {
          done = true
          call?.end(res.statusCode)
          res.end()
        },
        onError (err) {
          if (done) return
          done = true
          call?.end(res.headersSent ? res.statusCode : 0, err)
          // the upstream dropped the connection mid-response, or the client left
          if (res.headersSent || res.destroyed) { res.destroy(); return }
          if (err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT') markTimedOut(req)
          onError(upstreamError(req))
        }
      }
      // Client gone before the answer was delivered: end the upstream request now.
      res.once('close', () => { if (!res.writableFinished) cancel() })
      if (hasBody) req.once('aborted', cancel)
      const timeout = timeoutOf()
      pool.dispatch({
        path: pathOf(req.url ?? '/'),
        headersTimeout: timeout,
        bodyTimeout: timeout,
        method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
        headers: headers as unknown as string[],
        // a body read whole to check its signed digest (src/pipeline/steps.ts) goes as those same bytes
        body: hasBody ? bufferedBody(req) ?? req : null
      }, handler as unknown as Dispatcher.DispatchHandler)
    },
    ws: upgrader.ws,
    close () {
      upgrader.close()
      pool.destroy().catch(() => {})
    }
  }
}
