/**
 * The composition root of one gateway process: config → logger, metrics,
 * secret key → store (gated until its key check passes) → audit, tracer →
 * the gateway (src/pipeline/server.ts) → its listeners, then live reloads
 * and one shutdown (./shutdown.ts). `sidegate start` runs it once, or in each
 * worker of `--workers N` (./primary.ts runs the primary).
 */
import type { AddressInfo } from 'node:net'
import type { Config } from '../config/index.js'
import { changedKeys } from '../config/live.js'
import { Keyring } from '../crypto.js'
import { E } from '../errors.js'
import { maskUrl } from '../http/mask.js'
import { createAdminApi } from '../admin/api.js'
import { announceAdmin, listenAdmin, listenFailure, type AdminListener, type Listener } from '../admin/listener.js'
import { Auditor } from '../observability/audit.js'
import { abandonStdout, createLogger, flushStdout, setLevel, type Logger } from '../observability/log.js'
import { guardScrape, Metrics, scrapeCredentials } from '../observability/metrics.js'
import { createGateway } from '../pipeline/server.js'
import { KeyCheckError } from '../store/secret/check.js'
import type { ManagedStore } from '../store/types.js'
import { failed, type AppIo } from './io.js'
import { serverTlsOptions } from '../pipeline/tls.js'
import { VERSION } from './version.js'
import { ensureDefaults, type SecretKey } from './bootstrap.js'
import { keyForStart, loadStoreBackend, openStore, redisTarget, storeFields, storeWhere } from './open-store.js'
import type { WorkerLink } from './worker-link.js'
import { Reloader } from './reload.js'
import { exitNow, Shutdown } from './shutdown.js'
import { keepFastShapes } from './shapes.js'
import { warnGitExposure } from './git-exposure.js'

/** Seconds past drain delay + grace after which a stopping process exits regardless. */
const EXIT_MARGIN_S = 5
/** How long a stopping gateway waits for stdout to take its last log lines. */
const STDOUT_FLUSH_MS = 1000

/**
 * `sidegate start`: one process, or (`worker`) one of the workers of
 * `start --workers N`, which takes its config and live reloads from the
 * primary, serves /metrics to it over IPC and the admin API on a private
 * socket, and does not watch the config file (src/app/primary.ts).
 */
export async function start (config: Config, io: AppIo, env: NodeJS.ProcessEnv, worker?: WorkerLink): Promise<number> {
  keepFastShapes()
  const log: Logger = createLogger(config.log.level, undefined, worker === undefined ? {} : { worker: worker.slot })
  const metrics = config.metrics.enabled ? new Metrics() : null
  // the primary serves /metrics with --workers
  const scrapeAuth = metrics === null || worker !== undefined ? null : scrapeCredentials(config)
  // listen.tls read now: a bad certificate or key stops the start (exit 2) before the store opens
  try {
    if (config.listen.tls.cert_file !== null) serverTlsOptions(config.listen.tls)
  } catch (err) { return failed(io, err) }
  let secret: SecretKey
  try {
    secret = await keyForStart(config, log, env)
  } catch (err) {
    log.flush()
    return failed(io, err)
  }
  const keyring = new Keyring(secret.key)
  const verify = { mode: 'start' as const, where: storeWhere(config), source: secret.source, db: config.redis.db }
  const whereField = storeFields(config)
  // the key was used before: read from the key file sidegate writes
  // (not created by this start), or checked against this store already
  const keyFromFile = secret.source === config.secret_key_file && secret.created !== true
  let verifiedOnce = false
  let store: ManagedStore
  // a refusal before the shutdown exists (the embedded store opens before listening) waits for it
  let early: KeyCheckError | null = null
  let fatal = (err: KeyCheckError): void => { early ??= err }
  // Ready (/readyz) only once the key check passed and the Default org and the first
  // superuser exist. Redone on every (re)connect, since Redis may come back empty (or
  // another store); a failed attempt is retried, a failed key check is not.
  let prepared: Promise<void> | null = null
  const prepare = async (): Promise<void> => {
    prepared ??= (async () => {
      const usedBefore = keyFromFile || verifiedOnce
      const { notes, empty } = await store.verifyKey({
        ...verify,
        refuseEmpty: usedBefore && config.store.require_existing
      })
      verifiedOnce = true
      for (const n of notes) log[n.level](whereField, n.msg)
      store.setGate(null)
      if (empty && usedBefore) dataMissing(keyFromFile ? 'key_file' : 'check_value_lost')
      await ensureDefaults(store, config, log, io.err, audit)
    })().catch((err: unknown) => {
      if (!(err instanceof KeyCheckError)) prepared = null
      throw err
    })
    await prepared
  }
  try {
    await loadStoreBackend(config)
    store = openStore(config, log, keyring, () => {
      // until the key check passes again, nothing is read or written
      store.setGate(E.storeUnavailable())
      prepared = null
      prepare().catch((err: unknown) => {
        if (err instanceof KeyCheckError) {
          log.error({ ...whereField, problem: err.code }, `${err.message}; not serving: /readyz answers 503`)
          if (err.code === 'redis_db_unavailable' || err.code === 'store_data_missing') fatal(err)
        } else {
          log.error({ err: (err as Error).message }, 'bootstrap failed; will retry')
        }
      })
    }, { hooks: metrics?.storeHooks() })
  } catch (err) {
    return failed(io, err)
  }
  store.setGate(E.storeUnavailable())
  // before the connection: the first start's bootstrap (prepare, on ready) records the superuser it creates
  const audit = new Auditor({ config: config.audit, log, store, onStreamError: metrics?.auditStreamError })
  const dataMissing = (reason: string): void => {
    metrics?.storeDataMissing()
    audit.record({ event: 'store.data_missing', reason })
    log.warn({ ...whereField, reason }, reason === 'key_file'
      ? `the store is EMPTY, but the secret key comes from ${config.secret_key_file}, which sidegate wrote for a store that held data: that data is lost or elsewhere (another store.path or redis.url?). Set up again with a new admin; set store.require_existing: true to refuse instead`
      : 'the store is EMPTY although this process had checked its key against it: its data is lost (a Redis restarted without persistence?). Set up again with a new admin; set store.require_existing: true to refuse instead')
  }
  const connecting = store.connect()
  if (config.store.backend === 'sqlite') {
    // the file opens now or never: a clear line and exit 2, not a retry loop
    try { await connecting } catch (err) { await store.close(); return failed(io, err) }
  } else {
    connecting.catch((err: Error) => log.error({ redis: redisTarget(config), err: err.message }, 'redis unreachable at start; retrying, /readyz fails until it answers'))
  }
  // tracing on: the OpenTelemetry SDK is loaded now, and only now (src/observability/otel.ts)
  const tracer = config.tracing.url === null
    ? null
    : (await import('../observability/otel.js')).createTracer(
        config.tracing, log, { version: VERSION, upstream: config.upstream.url }
      )
  if (tracer !== null) log.info({ endpoint: maskUrl(config.tracing.url!), sampler: config.tracing.sampler.name }, 'tracing on')
  const gw = createGateway({ config, store, log, ready: prepare, metrics: metrics ?? undefined, tracer, audit })
  metrics?.observe(store, () => gw.draining)
  const reloader = new Reloader({
    current: () => gw.config,
    apply (next) {
      gw.apply(next)
      setLevel(log, next.log.level)
      if (next.reload.watch) reloader.watch()
      else reloader.close()
    },
    env,
    log,
    count: metrics?.configReload
  })
  if (worker === undefined) {
    // from now on SIGHUP reloads (without a handler it would end the process)
    process.on('SIGHUP', () => { if (!gw.draining) reloader.reload('SIGHUP') })
    if (config.reload.watch) reloader.watch()
  } else {
    // the primary reads the file and sends what it applied; a SIGHUP sent to a worker itself does nothing
    process.on('SIGHUP', () => {})
    worker.onApply((next) => {
      if (gw.draining) return
      const { live } = changedKeys(gw.config, next)
      gw.apply(next)
      setLevel(log, next.log.level)
      log.debug({ changed: live }, 'config reload from the primary applied')
    })
    if (metrics !== null) worker.onMetrics(async () => await metrics.registry.getMetricsAsJSON())
  }
  // the listeners beside the public port: /metrics, and with admin.enabled the admin API on its own
  const api = config.admin.enabled ? createAdminApi({ gateway: gw, store, log, audit }) : null
  let adminListener: AdminListener | null = null
  let metricsListener: AdminListener | null = null
  // Every listener is bound before any is announced: a second instance on this host fails on
  // whichever port is taken, saying which setting to change, without having said "listening".
  let binding: Listener = 'listen'
  let addr: AddressInfo
  try {
    addr = await gw.listen()
    if (worker !== undefined) {
      // /metrics goes to the primary over IPC; the admin API is served to the primary's relay only
      binding = 'admin'
      if (api !== null && worker.adminSocket !== null) {
        adminListener = await listenAdmin(
          { path: worker.adminSocket }, { metrics: null, api, relayed: true }
        )
      }
    } else {
      binding = 'metrics'
      if (metrics !== null) {
        metricsListener = await listenAdmin(
          { port: config.metrics.port, host: config.metrics.host },
          { metrics: guardScrape(metrics, scrapeAuth), api: null }
        )
      }
      binding = 'admin'
      if (api !== null) {
        adminListener = await listenAdmin(
          { port: config.admin.port, host: config.admin.host }, { metrics: null, api }
        )
      }
    }
  } catch (err) {
    io.err(worker !== undefined && binding === 'admin'
      ? `sidegate: worker ${worker.slot}: cannot serve the admin API on ${worker.adminSocket!}: ${(err as Error).message}\n`
      : listenFailure(config, binding, err as Error))
    await metricsListener?.close()
    await gw.shutdown(0)
    await tracer?.shutdown()
    await store.close()
    return 1
  }
  // once per start (with --workers, the first worker's): the files sidegate wrote that `git add -A` would take
  if (worker === undefined || worker.slot === 1) warnGitExposure(config, log)
  if (worker === undefined) {
    log.info({ address: `${addr.address}:${addr.port}`, upstream: config.upstream.url ?? '(built-in demo API)', abbrev: config.names.abbrev }, 'sidegate listening')
    if (metricsListener !== null) {
      const m = metricsListener.address
      log.info({ address: `${m.address}:${m.port}`, path: '/metrics' }, 'metrics listening')
    }
    if (adminListener !== null) announceAdmin(log, config, adminListener.address, 'admin API listening')
  } else {
    worker.listening()
  }
  const shutdown = new Shutdown({
    server: () => gw.config.server,
    marginS: EXIT_MARGIN_S,
    again: exitNow,
    overdue (code) {
      abandonStdout()
      process.stderr.write(`sidegate: shutdown took longer than server.drain_delay + server.shutdown_grace + ${EXIT_MARGIN_S} s; exiting\n`)
      process.exit(code === 0 ? 1 : code)
    },
    async run (signal, delay, code) {
      reloader.close()
      // 1. readiness false, still serving; 2. stop accepting, finish in-flight within the grace; 3. exit.
      log.info({ signal, drain_delay: delay, grace: gw.config.server.shutdown_grace }, 'draining: readiness is now false')
      await gw.drain(delay)
      log.info('closing the listener')
      await gw.shutdown()
      await adminListener?.close()
      await metricsListener?.close()
      // the spans still queued go to the collector (bounded by the exporter's timeout)
      await tracer?.shutdown()
      await store.close()
      log.info('stopped')
      // the last lines, if anyone still reads them: bounded, never a reason to stay alive
      await flushStdout(STDOUT_FLUSH_MS)
      return code
    }
  }).trap()
  fatal = (err) => {
    io.err(`sidegate: ${err.message}\n`)
    shutdown.stop('fatal', 2)
  }
  if (early !== null) fatal(early)
  return await shutdown.done
}
