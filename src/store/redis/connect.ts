/**
 * The one place Redis clients are built: standalone (a URL), Sentinel (a
 * master group name and its sentinels) or Cluster (seed nodes), each with
 * optional credentials and TLS. The Redis backend calls it twice: once for
 * the command connection (./storage.ts), which fails fast while disconnected,
 * and once for the pub/sub subscriber (./invalidation.ts), which queues and
 * retries forever.
 */
import { readFileSync } from 'node:fs'
import type { ConnectionOptions } from 'node:tls'
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis'
import type { RedisTls, RedisTopology } from '../../config/index.js'
import { UsageError } from '../../errors.js'

/** Both client kinds speak the same commands; typed as Redis so the store has one code path. */
export type RedisClient = Redis

export type ClientRole = 'command' | 'subscriber'

export interface RedisConnectOptions {
  url: string
  commandTimeout: number
  connectTimeout: number
  /** Mode, credentials and TLS; absent means standalone at `url`. */
  topology?: RedisTopology
}

export const STANDALONE: RedisTopology = {
  mode: 'standalone',
  sentinels: [],
  name: 'mymaster',
  nodes: [],
  username: null,
  password: null,
  sentinel_password: null,
  db: 0,
  tls: { enabled: false, ca_file: null, cert_file: null, key_file: null, servername: null, reject_unauthorized: true }
}

/** Connection-independent options: fail fast, bounded commands, quick reconnects. */
export function redisOptions (o: Pick<RedisConnectOptions, 'commandTimeout' | 'connectTimeout'>, role: ClientRole = 'command'): RedisOptions {
  const sub = role === 'subscriber'
  return {
    lazyConnect: true,
    // Fail fast while disconnected instead of queueing without bound. The
    // subscriber may queue its SUBSCRIBE until connected; it never serves requests.
    enableOfflineQueue: sub,
    // ioredis's own resubscribe after a reconnect has no handler: a client
    // closed during it dies of an unhandled rejection (./invalidation.ts subscribes again itself)
    autoResubscribe: !sub,
    maxRetriesPerRequest: sub ? null : 1,
    commandTimeout: sub ? undefined : o.commandTimeout,
    connectTimeout: o.connectTimeout,
    retryStrategy: (n: number) => Math.min(50 * n, 1000)
  }
}

function readTlsFile (path: string, key: string): Buffer {
  try {
    return readFileSync(path)
  } catch (err) {
    throw new UsageError(`config: redis.tls.${key}: cannot read ${path}: ${(err as Error).message}`)
  }
}

/** Node TLS options from the config, or undefined when TLS is off. */
export function tlsOptions (t: RedisTls, force = false): ConnectionOptions | undefined {
  if (!t.enabled && !force) return undefined
  const o: ConnectionOptions = { rejectUnauthorized: t.reject_unauthorized }
  if (t.ca_file !== null) o.ca = readTlsFile(t.ca_file, 'ca_file')
  if (t.cert_file !== null) o.cert = readTlsFile(t.cert_file, 'cert_file')
  if (t.key_file !== null) o.key = readTlsFile(t.key_file, 'key_file')
  if (t.servername !== null) o.servername = t.servername
  return o
}

// A primary demoted to replica (failover behind a DNS name or Sentinel):
// reconnect so the next command reaches the new primary.
const reconnectOnReadonly = (err: Error): 1 | false => err.message.startsWith('READONLY') ? 1 : false

function credentials (t: RedisTopology): Partial<RedisOptions> {
  const o: Partial<RedisOptions> = {}
  if (t.username !== null) o.username = t.username
  if (t.password !== null) o.password = t.password
  return o
}

/**
 * ioredis listens for its socket's first 'error' only (`once`). A TLS socket
 * can emit a second one, the server's alert read after this side refused the
 * server's certificate (a wrong redis.tls.ca_file): unhandled, it would crash
 * the process. Every socket the client opens gets a standing listener too;
 * the first error still reaches ioredis, which reports it and reconnects.
 */
function keepListening (client: Redis): Redis {
  const connector = (
    client as unknown as { connector?: { connect: (...a: unknown[]) => Promise<NodeJS.EventEmitter> } }
  ).connector
  if (connector === undefined || typeof connector.connect !== 'function') return client
  const connect = connector.connect.bind(connector)
  connector.connect = async (...a: unknown[]) => {
    const stream = await connect(...a)
    stream.on('error', () => {})
    return stream
  }
  return client
}

export function createRedisClient (o: RedisConnectOptions, role: ClientRole): RedisClient {
  const t = o.topology ?? STANDALONE
  const base = redisOptions(o, role)
  if (t.mode === 'cluster') {
    const tls = tlsOptions(t.tls)
    const opts: ClusterOptions = {
      lazyConnect: true,
      enableOfflineQueue: base.enableOfflineQueue,
      scaleReads: 'master',
      clusterRetryStrategy: (n: number) => Math.min(100 * n, 2000),
      slotsRefreshTimeout: Math.min(o.connectTimeout, 2000),
      // TLS certificates name hosts, not the IPs nodes announce: keep the names.
      ...(tls === undefined
        ? {}
        : { dnsLookup: (address: string, cb: (err: null, address: string) => void) => cb(null, address) }),
      redisOptions: {
        ...credentials(t),
        ...(tls === undefined ? {} : { tls }),
        maxRetriesPerRequest: base.maxRetriesPerRequest,
        commandTimeout: base.commandTimeout,
        connectTimeout: base.connectTimeout
      }
    }
    const cluster = new Cluster(t.nodes, opts)
    cluster.on('+node', (node: Redis) => { keepListening(node) })
    return cluster as unknown as RedisClient
  }
  if (t.mode === 'sentinel') {
    const tls = tlsOptions(t.tls)
    return keepListening(new Redis({
      ...base,
      ...credentials(t),
      sentinels: t.sentinels,
      name: t.name,
      role: 'master',
      db: t.db,
      ...(t.sentinel_password === null ? {} : { sentinelPassword: t.sentinel_password }),
      ...(tls === undefined ? {} : { tls, enableTLSForSentinelMode: true, sentinelTLS: tls }),
      sentinelCommandTimeout: o.connectTimeout,
      sentinelRetryStrategy: (n: number) => Math.min(100 * n, 1000),
      // Sentinel kills clients of a demoted primary and a dead one closes the
      // connection: either way the reconnect asks the sentinels for the new
      // primary (and READONLY below covers a primary demoted behind our back).
      updateSentinels: true,
      reconnectOnError: reconnectOnReadonly
    }))
  }
  const tls = tlsOptions(t.tls, o.url.startsWith('rediss:'))
  // ioredis lets the URL's credentials win over the options: redis.password and
  // redis.username (e.g. from a Secret) must win, so drop the URL's
  const url = new URL(o.url)
  if (t.password !== null) url.password = ''
  if (t.username !== null) url.username = ''
  return keepListening(new Redis(url.toString(), {
    ...base,
    ...credentials(t),
    ...(t.db === 0 ? {} : { db: t.db }),
    ...(tls === undefined ? {} : { tls }),
    reconnectOnError: reconnectOnReadonly
  }))
}

/** What to name in logs: the URL without its password, or the topology. */
export { describeRedis } from './describe.js'
