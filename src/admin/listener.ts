/**
 * The listeners apart from the public port, so that neither is reachable
 * through the Service or load balancer in front of the gateway: GET /metrics
 * on metrics.host:metrics.port (metrics.enabled, src/observability/metrics.ts), and the
 * admin API under /admin/v1/ on admin.host:admin.port (admin.enabled,
 * src/admin/api.ts; loopback by default, as metrics usually must not be).
 * Anything else each answers 404 in plain text.
 *
 * With `sidegate start --workers N` (src/app/primary.ts) the primary runs both,
 * with /metrics summed over the workers and admin API calls relayed to a
 * worker, which serves them on a private unix socket (`path`, `relayed`).
 */
import { rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { isIP } from 'node:net'
import { ADMIN_PREFIX } from './api.js'
import type { Config } from '../config/index.js'
import type { Logger } from '../observability/log.js'

export interface AdminListener {
  readonly address: AddressInfo
  close (): Promise<void>
}

/** GET /metrics: Metrics (src/observability/metrics.ts), or the primary's sum over its workers. */
export interface Scraper { scrape (req: http.IncomingMessage, res: http.ServerResponse): void }
/** The admin API (src/admin/api.ts), or the primary's relay to a worker. */
export interface AdminHandler { handle (req: http.IncomingMessage, res: http.ServerResponse): void }

/** The header the primary adds to a relayed admin call: the client's address (the worker sees a unix socket). */
export const RELAY_PEER_HEADER = 'x-sidegate-relay-peer'

export type Where = { port: number, host: string } | { path: string }

export async function listenAdmin (
  where: Where, o: { metrics: Scraper | null, api: AdminHandler | null, relayed?: boolean }
): Promise<AdminListener> {
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
    if ('path' in where) {
      rmSync(where.path, { force: true }); server.listen(where.path, done)
    } else server.listen(where.port, where.host, done)
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
  Object.defineProperty(
    req.socket,
    'remoteAddress',
    { value: typeof peer === 'string' ? peer : undefined, configurable: true, writable: true }
  )
}

/** Is `host` a loopback address (or localhost), reachable only from this host? */
export function isLoopback (host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '')
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true
  if (h.startsWith('::ffff:')) return isLoopback(h.slice(7))
  return isIP(h) === 4 && h.startsWith('127.')
}

/** The admin listener is up: logged, with a warning when another host than this one may reach it. */
export function announceAdmin (log: Logger, config: Config, addr: AddressInfo, msg: string): void {
  log.info({ address: `${addr.address}:${addr.port}`, path: ADMIN_PREFIX }, msg)
  if (!isLoopback(config.admin.host)) {
    log.warn({ address: `${addr.address}:${addr.port}` }, `the admin API listens on ${config.admin.host}, not a loopback address: keep it off public networks (a NetworkPolicy, a firewall), or set admin.host: 127.0.0.1`)
  }
}

/** The listeners of `sidegate start`: the public port, /metrics, the admin API. */
export type Listener = 'listen' | 'metrics' | 'admin'

/** What to change when a listener cannot start: its keys, their environment variables, and how to do without it. */
const SETTINGS: Record<Listener, {
  port: string,
  portEnv: string,
  host: string,
  hostEnv: string | null,
  off: string | null
}> = {
  listen: { port: 'listen.port', portEnv: 'SIDEGATE_PORT', host: 'listen.host', hostEnv: 'SIDEGATE_HOST', off: null },
  metrics: { port: 'metrics.port', portEnv: 'SIDEGATE_METRICS_PORT', host: 'metrics.host', hostEnv: null, off: 'metrics.enabled: false' },
  admin: { port: 'admin.port', portEnv: 'SIDEGATE_ADMIN_PORT', host: 'admin.host', hostEnv: null, off: 'admin.enabled: false' }
}

/**
 * The one line for a listener that could not start: where, which setting, why,
 * and what to set instead (`sidegate: cannot listen on 0.0.0.0:7080 (metrics.port):
 * address in use (EADDRINUSE); set metrics.port (or SIDEGATE_METRICS_PORT) or
 * metrics.enabled: false`).
 */
export function listenFailure (config: Config, which: Listener, err: Error): string {
  const { host, port } = config[which]
  const s = SETTINGS[which]
  const code = (err as NodeJS.ErrnoException).code
  const onHost = code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN'
  const why = code === 'EADDRINUSE'
    ? 'address in use (EADDRINUSE)'
    : code === 'EACCES' ? 'permission denied (EACCES): a port below 1024 needs privileges' : err.message
  const key = onHost ? s.host : s.port
  const env = onHost ? s.hostEnv : s.portEnv
  return `sidegate: cannot listen on ${host.includes(':') ? `[${host}]` : host}:${port} (${key}): ${why}; set ${key}${env === null ? '' : ` (or ${env})`}${s.off === null ? '' : ` or ${s.off}`}\n`
}
