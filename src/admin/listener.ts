/**
 * The admin listener (metrics.host:metrics.port), apart from the public port
 * so that neither is reachable through the Service or load balancer in front
 * of the gateway: GET /metrics (metrics.enabled, src/metrics.ts) and the
 * admin API under /admin/v1/ (admin.enabled, src/admin/api.ts). It runs when
 * either is on; anything else it answers 404 in plain text.
 *
 * With `sidegate start --workers N` (src/cluster.ts) the primary runs it, with
 * /metrics summed over the workers and admin API calls relayed to a worker,
 * which serves them on a private unix socket (`path`, `relayed`).
 */
import { rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { ADMIN_PREFIX } from './api.js'

export interface AdminListener {
  readonly address: AddressInfo
  close (): Promise<void>
}

/** GET /metrics: Metrics (src/metrics.ts), or the primary's sum over its workers. */
export interface Scraper { scrape (req: http.IncomingMessage, res: http.ServerResponse): void }
/** The admin API (src/admin/api.ts), or the primary's relay to a worker. */
export interface AdminHandler { handle (req: http.IncomingMessage, res: http.ServerResponse): void }

/** The header the primary adds to a relayed admin call: the client's address (the worker sees a unix socket). */
export const RELAY_PEER_HEADER = 'x-sidegate-relay-peer'

export type Where = { port: number, host: string } | { path: string }

export async function listenAdmin (where: Where, o: { metrics: Scraper | null, api: AdminHandler | null, relayed?: boolean }): Promise<AdminListener> {
  const hint = [o.metrics === null ? '' : 'GET /metrics', o.api === null ? '' : `${ADMIN_PREFIX}…`].filter(Boolean).join(' or ')
  const server = http.createServer((req, res) => {
    if (o.relayed === true) fromRelay(req)
    const path = (req.url ?? '/').split('?')[0]
    if (o.metrics !== null && path === '/metrics' && (req.method === 'GET' || req.method === 'HEAD')) {
      o.metrics.scrape(req, res)
      return
    }
    if (o.api !== null && path.startsWith(ADMIN_PREFIX)) {
      o.api.handle(req, res)
      return
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: try ${hint}\n`)
  })
  server.keepAliveTimeout = 65_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    const done = (): void => { server.off('error', reject); resolve() }
    // a worker killed before it could close its socket leaves the file behind (in the primary's private dir)
    if ('path' in where) { rmSync(where.path, { force: true }); server.listen(where.path, done) }
    else server.listen(where.port, where.host, done)
  })
  const addr = server.address()
  return {
    address: typeof addr === 'string' || addr === null ? { address: String(addr), family: 'unix', port: 0 } : addr,
    async close () {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

/**
 * A call relayed by the primary over the worker's private socket (only the
 * primary can connect to it: a directory of mode 0700): the client's address
 * is the one the primary saw, as if the worker had accepted the connection.
 */
function fromRelay (req: http.IncomingMessage): void {
  const peer = req.headers[RELAY_PEER_HEADER]
  delete req.headers[RELAY_PEER_HEADER]
  for (let i = req.rawHeaders.length - 2; i >= 0; i -= 2) {
    if (req.rawHeaders[i].toLowerCase() === RELAY_PEER_HEADER) req.rawHeaders.splice(i, 2)
  }
  Object.defineProperty(req.socket, 'remoteAddress', { value: typeof peer === 'string' ? peer : undefined, configurable: true, writable: true })
}
