/**
 * The primary's admin API with `--workers N`: each call is relayed, round
 * robin, to a listening worker's private unix socket, with the caller's
 * address in RELAY_PEER_HEADER (which the worker trusts only on that socket).
 */
import http from 'node:http'
import { E } from '../errors.js'
import { RELAY_PEER_HEADER } from '../admin/listener.js'
import { sendError } from '../respond.js'

/** A worker as the relay sees it. */
export interface RelayTarget { readonly listening: boolean, readonly adminSocket: string | null }

export function adminRelay (slots: readonly RelayTarget[], stopping: () => boolean): {
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => void
} {
  let turn = 0
  return {
    handle (req, res) {
      const ready = slots.filter((s) => s.listening && s.adminSocket !== null)
      if (ready.length === 0) { sendError(res, stopping() ? E.shuttingDown() : E.workerUnavailable()); return }
      const slot = ready[turn++ % ready.length]
      const headers: string[] = []
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i].toLowerCase()
        if (name === RELAY_PEER_HEADER || name === 'connection' || name === 'keep-alive') continue
        headers.push(req.rawHeaders[i], req.rawHeaders[i + 1])
      }
      headers.push(RELAY_PEER_HEADER, req.socket.remoteAddress ?? '')
      const out = http.request({
        socketPath: slot.adminSocket!,
        method: req.method,
        path: req.url,
        headers,
        agent: false
      }, (answer) => {
        const h: http.OutgoingHttpHeaders = {}
        for (const [k, v] of Object.entries(answer.headers)) {
          if (k !== 'connection' && k !== 'keep-alive' && k !== 'transfer-encoding' && v !== undefined) h[k] = v
        }
        res.writeHead(answer.statusCode ?? 502, h)
        answer.pipe(res)
      })
      out.on('error', () => {
        if (!res.headersSent) sendError(res, E.workerUnavailable())
        else res.destroy()
      })
      req.pipe(out)
    }
  }
}
