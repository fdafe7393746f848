/**
 * Prometheus metrics (prom-client) on a listener of their own
 * (src/admin/listener.ts), so they are not reachable through the Service that
 * fronts the gateway. The per-request
 * cost is a few additions to plain numbers (Metrics.request); prom-client
 * sees them only when /metrics is scraped. Labels are
 * bounded: the status code (standard codes only, else its class), the auth
 * method (none, or a credential kind's label), sidegate's own error codes.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { dirname, resolve } from 'node:path'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { checkGateStats } from '../auth/check-gate.js'
import { KINDS } from '../auth/credentials.js'
import type { CacheStats } from '../store/cache.js'
import type { Config } from '../config/index.js'
import { E, UsageError } from '../errors.js'
import { sendError } from '../respond.js'
import { equalBytes } from '../crypto.js'

/** What the gateway calls once per finished request. */
export interface RequestObserver {
  /** `seconds`: from the request's start to its end */
  request (status: number, authMethod: string | undefined, code: string | undefined, seconds: number): void
  /** a request the rate limit could not count: the store was unavailable (src/auth/rate-limit.ts) */
  rateLimitStoreError?: () => void
  /** a pass of auth.keys.disable_after that this replica ran, and the keys it disabled (src/admin/unused-keys.ts) */
  unusedKeysPass?: (disabled: number) => void
  /** an audit event the stream did not take (src/observability/audit.ts) */
  auditStreamError?: () => void
}

/** The parts of the store the metrics read at scrape time. */
export interface ObservedStore {
  readonly isReady: boolean
  /** the in-process caches (ManagedStore.caches) */
  readonly caches: {
    readonly users: CacheStats
    readonly accessKeys: CacheStats
    readonly privateTokens: CacheStats
    readonly sessions?: CacheStats
  }
}

/** The auth_method labels by index (Metrics.request: status * 8 + index): none, then each kind's. */
const AUTH_METHODS = ['none', ...KINDS.map((k) => k.metric)]
/** The method names at the same indexes (Metrics.request finds the index; 'none' matches no method) */
const METHODS: string[] = ['none', ...KINDS.map((k) => k.method)]
if (AUTH_METHODS.length > 8) throw new Error('metrics: at most 7 credential kinds fit the request key (status * 8 + kind)')

function statusLabel (status: number): string {
  return http.STATUS_CODES[status] === undefined ? `${Math.floor(status / 100)}xx` : String(status)
}

/** The request duration histogram's buckets, in seconds. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

export class Metrics implements RequestObserver {
  readonly registry = new Registry()
  readonly #redisErrors: Counter<'kind'>
  readonly #rateLimitStoreErrors: Counter
  readonly #configReloads: Counter<'result'>
  readonly #unusedKeyPasses: Counter
  readonly #unusedKeysDisabled: Counter
  readonly #auditStreamErrors: Counter
  readonly #storeDataMissing: Counter
  /**
   * The per-request figures are counted here, in plain numbers, and handed to
   * prom-client only when /metrics is scraped (the `collect` hooks below):
   * requests by status * 8 + auth method index, failures by code, the
   * duration histogram's bucket counts (not cumulative), sum and count.
   */
  readonly #requestCounts = new Map<number, number>()
  readonly #failureCounts = new Map<string, number>()
  readonly #upstreamCounts = new Map<string, number>()
  readonly #buckets = new Float64Array(BUCKETS.length + 1)
  #durationSum = 0
  #durationCount = 0

  constructor (o: { processMetrics?: boolean } = {}) {
    const registers = [this.registry]
    const self = this
    // each collect adds what was counted since the last scrape (prom-client keeps the totals)
    const drain = (counts: Map<string, number> | Map<number, number>, add: (key: never, n: number) => void): void => {
      for (const [k, n] of counts) if (n > 0) add(k as never, n)
      counts.clear()
    }
    new Counter({
      name: 'sidegate_http_requests_total',
      help: 'Requests answered, by status code and authentication method (none: public or unauthenticated).',
      labelNames: ['status', 'auth_method'],
      registers,
      collect () {
        drain(
          self.#requestCounts,
          (key: number, n) => this.inc(
            { status: statusLabel(Math.floor(key / 8)), auth_method: AUTH_METHODS[key % 8] ?? 'none' }, n
          )
        )
      }
    })
    const duration = new Histogram({
      name: 'sidegate_http_request_duration_seconds',
      help: 'Time from request start to response end, including authentication and the upstream.',
      buckets: BUCKETS,
      registers,
      collect () { self.#exportDuration(duration) }
    })
    new Counter({
      name: 'sidegate_auth_failures_total',
      help: 'Requests refused with 401 or 403, by error code.',
      labelNames: ['code'],
      registers,
      collect () { drain(self.#failureCounts, (code: string, n) => this.inc({ code }, n)) }
    })
    new Counter({
      name: 'sidegate_upstream_errors_total',
      help: 'Requests the upstream did not answer: upstream_unavailable (502) or upstream_timeout (504).',
      labelNames: ['code'],
      registers,
      collect () { drain(self.#upstreamCounts, (code: string, n) => this.inc({ code }, n)) }
    })
    this.#rateLimitStoreErrors = new Counter({ name: 'sidegate_rate_limit_store_errors_total', help: 'Requests the rate limit could not count because Redis was unavailable (let through or refused as rate_limit.on_store_error says).', registers })
    this.#unusedKeyPasses = new Counter({ name: 'sidegate_unused_key_passes_total', help: 'Passes of auth.keys.disable_after this replica ran (one replica runs each pass).', registers })
    this.#unusedKeysDisabled = new Counter({ name: 'sidegate_unused_keys_disabled_total', help: 'Access keys this replica disabled because they were unused for auth.keys.disable_after days.', registers })
    this.#auditStreamErrors = new Counter({ name: 'sidegate_audit_stream_errors_total', help: 'Audit events not appended to the audit stream (audit.stream): Redis failed or was too slow; each is still in the log.', registers })
    this.#redisErrors = new Counter({ name: 'sidegate_redis_errors_total', help: 'Redis errors: connection (reported by the client) or command (a command that failed or timed out).', labelNames: ['kind'], registers })
    this.#storeDataMissing = new Counter({ name: 'sidegate_store_data_missing_total', help: 'Times the store was found empty although the secret key was used before (audit event store.data_missing).', registers })
    this.#configReloads = new Counter({ name: 'sidegate_config_reloads_total', help: 'Live reloads of gateway.yml (SIGHUP or the file changing): success (applied, or nothing changed) or failure (not valid, or a key that cannot change live).', labelNames: ['result'], registers })
    const gateSeen = { busy: 0, address: 0, prefix: 0, dropped: 0 }
    new Counter({
      name: 'sidegate_password_checks_refused_total',
      help: 'Password checks not run (auth.password_checks): busy (503, all places taken), address (429, one client address held too many), prefix (429, one network held too many: auth.password_checks.ipv4_prefixes, ipv6_prefixes), dropped (its client left while it waited).',
      labelNames: ['reason'],
      registers,
      collect () {
        for (const reason of ['busy', 'address', 'prefix', 'dropped'] as const) {
          this.inc({ reason }, checkGateStats[reason] - gateSeen[reason])
          gateSeen[reason] = checkGateStats[reason]
        }
      }
    })
    this.#configReloads.inc({ result: 'success' }, 0)
    this.#configReloads.inc({ result: 'failure' }, 0)
    this.#redisErrors.inc({ kind: 'connection' }, 0)
    this.#redisErrors.inc({ kind: 'command' }, 0)
    if (o.processMetrics !== false) collectDefaultMetrics({ register: this.registry })
  }

  request (status: number, authMethod: string | undefined, code: string | undefined, seconds: number): void {
    const m = authMethod === undefined ? 0 : METHODS.indexOf(authMethod)
    const key = status * 8 + (m === -1 ? 0 : m)
    this.#requestCounts.set(key, (this.#requestCounts.get(key) ?? 0) + 1)
    let b = 0
    while (b < BUCKETS.length && seconds > BUCKETS[b]) b++
    this.#buckets[b]++
    this.#durationSum += seconds
    this.#durationCount++
    if (code === undefined) return
    if (status === 401 || status === 403) this.#failureCounts.set(code, (this.#failureCounts.get(code) ?? 0) + 1)
    else if (code === 'upstream_unavailable' || code === 'upstream_timeout') this.#upstreamCounts.set(code, (this.#upstreamCounts.get(code) ?? 0) + 1)
  }

  /** The duration histogram as prom-client exports it: its one (label-less) series, made from the counts here. */
  #exportDuration (h: Histogram): void {
    const bucketValues: Record<number, number> = {}
    for (let i = 0; i < BUCKETS.length; i++) bucketValues[BUCKETS[i]] = this.#buckets[i]
    // prom-client keeps a histogram's series in hashMap, keyed by the label hash ('' without labels);
    // the last bucket (above 30 s) is only in the count, as prom-client counts it (+Inf)
    h.reset()
    ;(h as unknown as { hashMap: Record<string, unknown> }).hashMap[''] = {
      labels: {},
      bucketValues,
      sum: this.#durationSum,
      count: this.#durationCount
    }
  }

  readonly rateLimitStoreError = (): void => { this.#rateLimitStoreErrors.inc() }
  readonly unusedKeysPass = (disabled: number): void => {
    this.#unusedKeyPasses.inc(); this.#unusedKeysDisabled.inc(disabled)
  }

  /** A live reload's outcome (src/app/reload.ts). */
  readonly configReload = (result: 'success' | 'failure'): void => { this.#configReloads.inc({ result }) }
  readonly auditStreamError = (): void => { this.#auditStreamErrors.inc() }
  readonly storeDataMissing = (): void => { this.#storeDataMissing.inc() }

  /** Hooks for openStore: connection and command errors. */
  storeHooks (): { onConnectionError: () => void, onCommandError: () => void } {
    return {
      onConnectionError: () => this.#redisErrors.inc({ kind: 'connection' }),
      onCommandError: () => this.#redisErrors.inc({ kind: 'command' })
    }
  }

  /** Scrape-time views of the store (in-process cache counters, connection state) and of draining. */
  observe (store: ObservedStore, isDraining: () => boolean): void {
    const registers = [this.registry]
    const c = store.caches
    const caches: Array<[string, CacheStats]> = [['users', c.users], ['access_keys', c.accessKeys], ['private_tokens', c.privateTokens]]
    if (c.sessions !== undefined) caches.push(['sessions', c.sessions])
    const fromCaches = (field: 'hits' | 'misses' | 'size') => function (this: Counter<'cache'> | Gauge<'cache'>) {
      this.reset()
      for (const [name, c] of caches) (this as Gauge<'cache'>).inc({ cache: name }, c[field])
    }
    new Counter({ name: 'sidegate_cache_hits_total', help: 'In-process cache hits, by cache.', labelNames: ['cache'], registers, collect: fromCaches('hits') })
    new Counter({ name: 'sidegate_cache_misses_total', help: 'In-process cache misses (absent or expired), by cache.', labelNames: ['cache'], registers, collect: fromCaches('misses') })
    new Gauge({ name: 'sidegate_cache_entries', help: 'Entries held in each in-process cache.', labelNames: ['cache'], registers, collect: fromCaches('size') })
    // summed over --workers like every counter (src/app/primary.ts), except
    // these two: 1 only if every worker's Redis is up; 1 once any worker drains
    new Gauge({ name: 'sidegate_redis_up', help: '1 when the Redis command connection is ready (with --workers: in every worker).', registers, aggregator: 'min', collect () { this.set(store.isReady ? 1 : 0) } })
    new Gauge({ name: 'sidegate_draining', help: '1 after SIGTERM: readiness is false and the gateway is draining.', registers, aggregator: 'max', collect () { this.set(isDraining() ? 1 : 0) } })
  }

  /** GET (or HEAD) /metrics: the Prometheus text. */
  scrape (req: http.IncomingMessage, res: http.ServerResponse): void {
    this.registry.metrics().then((text) => {
      res.writeHead(200, { 'content-type': this.registry.contentType, 'cache-control': 'no-store' })
      res.end(req.method === 'HEAD' ? undefined : text)
    }, () => { res.writeHead(500).end() })
  }
}

/** GET /metrics (src/admin/listener.ts Scraper), or the primary's sum over its workers. */
export interface Scrape { scrape (req: http.IncomingMessage, res: http.ServerResponse): void }

/**
 * metrics.auth: the credentials a scrape must send, as Prometheus sends them
 * (`authorization: {credentials_file}`: Bearer; `basic_auth: {username,
 * password_file}`: Basic). The files are read once, at start, relative to
 * the config file. Null when neither is set (the default: no credential).
 */
export function scrapeCredentials (config: Pick<Config, 'metrics' | 'file'>): string[] | null {
  const a = config.metrics.auth
  const base = config.file === null ? process.cwd() : dirname(config.file)
  const read = (key: string, file: string): string => {
    let v: string
    try { v = readFileSync(resolve(base, file), 'utf8').replace(/\r?\n$/, '') } catch (err) {
      throw new UsageError(`metrics.auth.${key}: cannot read ${resolve(base, file)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
    if (v.trim() === '') throw new UsageError(`metrics.auth.${key}: ${resolve(base, file)} is empty`)
    return v
  }
  const accepted: string[] = []
  if (a.bearer_token_file !== null) accepted.push(`Bearer ${read('bearer_token_file', a.bearer_token_file)}`)
  if (a.username !== null && a.password_file !== null) {
    accepted.push(`Basic ${Buffer.from(`${a.username}:${read('password_file', a.password_file)}`, 'utf8').toString('base64')}`)
  }
  return accepted.length === 0 ? null : accepted
}

const digest = (v: string): Buffer => createHash('sha256').update(v, 'utf8').digest()

/**
 * A scrape that must send one of `accepted` (whole Authorization header
 * values, scrapeCredentials): compared in constant time over their SHA-256,
 * every one of them (no early exit); else 401 with WWW-Authenticate.
 */
export function guardScrape (inner: Scrape, accepted: string[] | null): Scrape {
  if (accepted === null) return inner
  const expected = accepted.map(digest)
  const challenges = accepted.map((a) => a.startsWith('Bearer ') ? 'Bearer realm="sidegate metrics"' : 'Basic realm="sidegate metrics", charset="UTF-8"')
  return {
    scrape (req, res) {
      const sent = req.headers.authorization
      const got = digest(typeof sent === 'string' ? sent.trim().replace(/^(bearer|basic) +/i, (m) => m[0].toUpperCase() + m.slice(1).trim().toLowerCase() + ' ') : '')
      let ok = false
      for (const e of expected) ok = equalBytes(e, got) || ok
      if (!ok) {
        sendError(res, sent === undefined ? E.notAuthenticated() : E.authenticationFailed(), undefined, challenges)
        return
      }
      inner.scrape(req, res)
    }
  }
}
