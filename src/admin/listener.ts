/**
 * The admin listener (metrics.host:metrics.port), apart from the public port
 * so that neither is reachable through the Service or load balancer in front
 * of the gateway: GET /metrics (metrics.enabled, src/metrics.ts) and the
 * admin API under /admin/v1/ (admin.enabled, src/admin/api.ts). It runs when
 * either is on; anything else it answers 404 in plain text.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Metrics } from '../metrics.js'
import { ADMIN_PREFIX, type AdminApi } from './api.js'

export interface AdminListener {
  readonly address: AddressInfo
  close (): Promise<void>
}

export async function listenAdmin (port: number, host: string, o: { metrics: Metrics | null, api: AdminApi | null }): Promise<AdminListener> {
  const hint = [o.metrics === null ? '' : 'GET /metrics', o.api === null ? '' : `${ADMIN_PREFIX}…`].filter(Boolean).join(' or ')
  const server = http.createServer((req, res) => {
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
    server.listen(port, host, () => { server.off('error', reject); resolve() })
  })
  return {
    address: server.address() as AddressInfo,
    async close () {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
