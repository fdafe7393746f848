/**
 * `sidegate start --workers N` (server.workers): N processes serve listen.port
 * through node:cluster. With 1 (the default) none of this runs: `start` is one
 * process, as it always was.
 *
 * The primary serves no request. It reads and validates the config (once),
 * settles the secret key (so a first start creates one key file, not N), forks
 * the workers and hands each the config in force over IPC, and then:
 *
 * - holds the public port (cluster's round-robin: it accepts each connection
 *   and passes it to the next worker, which serves it with the normal code);
 * - runs the listeners for /metrics (metrics.host:metrics.port), the sum
 *   over the workers (prom-client's AggregatorRegistry: counters, histogram
 *   buckets, sums and counts with the same name and labels are added; see
 *   docs/deploy.md for the gauges), and the admin API (admin.host:admin.port), whose
 *   calls are relayed round robin to a
 *   worker's private unix socket;
 * - decides live reloads (SIGHUP, reload.watch) with the same Reloader as one
 *   process, logs the one outcome line, and sends an applied config to every
 *   worker;
 * - passes SIGTERM and SIGINT to every worker (each drains as one process
 *   does) and exits when all have, non-zero if any did;
 * - restarts a worker that dies, after a backoff (logged, counted in
 *   sidegate_worker_restarts_total). A worker that ends with exit code 2 (a
 *   config, key or store problem that a restart cannot cure), or any worker
 *   before all have first listened, stops the whole gateway instead.
 *
 * A worker is like a replica: its own Redis connections, caches and pub/sub
 * invalidation, its own first-start bootstrap (safe when several race: the
 * store's writes are NX). It exits at once if the primary goes away (node:cluster
 * does that when the IPC channel closes), so a SIGKILLed primary leaves none.
 */
import cluster, { type Worker } from 'node:cluster'
import type http from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { AggregatorRegistry, Counter, Gauge } from 'prom-client'
import type { Config } from '../config/index.js'
import { validate } from '../config/validate.js'
import { nodeAt } from '../config/schema.js'
import { UsageError } from '../errors.js'
import { abandonStdout, createLogger, flushStdout, setLevel, type Logger } from '../observability/log.js'
import { guardScrape, Metrics, scrapeCredentials } from '../observability/metrics.js'
import { serverTlsOptions } from '../pipeline/tls.js'
import { announceAdmin, listenAdmin, listenFailure, type AdminListener, type Listener } from '../admin/listener.js'
import type { AppIo } from './io.js'
import { keyForStart } from './open-store.js'
import { Reloader } from './reload.js'
import { adminRelay } from './relay.js'
import { Shutdown } from './shutdown.js'
import type { MetricsJson, ToPrimary, ToWorker } from './worker-link.js'
import { exitCodeOf } from '../cli/exit-codes.js'

export { connectToPrimary, isWorker, type WorkerLink } from './worker-link.js'

/**
 * `--workers` (or server.workers) as a number of processes: validated by the
 * same rule as the config key (a whole number from 1 to 256, or auto: the
 * CPUs available to this process).
 */
export function workerCount (flag: string | undefined, config: Config): number {
  let v: number | string = config.server.workers
  if (flag !== undefined) {
    const { value, problems } = validate(nodeAt('server.workers')!, flag)
    if (problems.length > 0) throw new UsageError(`--workers ${problems[0].message}`)
    v = value as number | string
  }
  return v === 'auto' ? availableParallelism() : v as number
}

/** A worker's restart waits this long after its first death, doubling per death in a row… */
const RESTART_MIN_MS = 250
/** …up to this… */
const RESTART_MAX_MS = 30_000
/** …and the count starts again once a worker has served this long. */
const STABLE_MS = 60_000
/** How long /metrics waits for a worker's figures; a worker that does not answer in time is left out of the sum. */
const METRICS_WAIT_MS = 5000
/** Past drain delay + grace + this, a stopping primary kills what is left and exits. */
const STOP_MARGIN_S = 10

/** One worker's place: a restarted worker takes the slot (and admin socket) of the one it replaces. */
export interface Slot {
  n: number
  worker: Worker | null
  /** when the current worker was forked */
  since: number
  listening: boolean
  /** deaths in a row (reset once a worker lived STABLE_MS) */
  deaths: number
  restartTimer: NodeJS.Timeout | null
  adminSocket: string | null
}

/**
 * The primary of `sidegate start --workers N` (N > 1). Resolves with the exit
 * code once every worker has exited.
 */
export async function runPrimary (config: Config, count: number, io: AppIo, env: NodeJS.ProcessEnv): Promise<number> {
  const log: Logger = createLogger(config.log.level, undefined, { worker: 0 })
  // the key before any worker: on a first start, one key (and key file) for all of them
  let scrapeAuth: string[] | null
  try {
    await keyForStart(config, log, env)
    scrapeAuth = config.metrics.enabled ? scrapeCredentials(config) : null
    // every worker serves listen.tls: a bad certificate or key stops the start here, not in a restart loop
    if (config.listen.tls.cert_file !== null) serverTlsOptions(config.listen.tls)
  } catch (err) {
    log.flush()
    if (err instanceof UsageError) { io.err(`sidegate: ${err.message}\n`); return exitCodeOf(err.code) }
    throw err
  }
  return await new Primary(config, count, io, env, log, scrapeAuth).run()
}

class Primary {
  readonly slots: Slot[] = []
  #inForce: Config
  #allUp = false
  readonly #exitCodes: number[] = []
  readonly #metrics: Metrics | null
  readonly #restarts: Counter | null
  readonly #socketDir: string | null
  readonly #reloader: Reloader
  readonly #shutdown: Shutdown
  #adminListener: AdminListener | null = null
  #metricsListener: AdminListener | null = null
  /** resolves true once every worker listens, false when the start is abandoned */
  #up: (ok: boolean) => void = () => {}
  /** resolves once every worker has exited while stopping */
  #allExited: () => void = () => {}
  /** metrics requests in flight, by id */
  readonly #pending = new Map<number, (data: MetricsJson | null) => void>()
  #nextId = 1

  constructor (
    config: Config,
    private readonly count: number,
    private readonly io: AppIo,
    env: NodeJS.ProcessEnv,
    private readonly log: Logger,
    private readonly scrapeAuth: string[] | null
  ) {
    this.#inForce = config
    this.#metrics = config.metrics.enabled ? new Metrics({ processMetrics: false }) : null
    const registers = this.#metrics === null ? [] : [this.#metrics.registry]
    this.#restarts = this.#metrics === null ? null : new Counter({ name: 'sidegate_worker_restarts_total', help: 'Workers (sidegate start --workers N) the primary restarted after one died.', registers })
    if (this.#metrics !== null) {
      const slots = this.slots
      new Gauge({ name: 'sidegate_workers', help: 'Workers (sidegate start --workers N) running and listening.', registers, collect () { this.set(slots.filter((s) => s.listening).length) } })
    }
    this.#socketDir = config.admin.enabled ? mkdtempSync(join(tmpdir(), 'sidegate-')) : null
    for (let n = 1; n <= count; n++) {
      this.slots.push({ n, worker: null, since: 0, listening: false, deaths: 0, restartTimer: null, adminSocket: this.#socketDir === null ? null : join(this.#socketDir, `w${n}.sock`) })
    }
    this.#reloader = new Reloader({
      current: () => this.#inForce,
      apply: (next) => {
        this.#inForce = next
        setLevel(log, next.log.level)
        if (next.reload.watch) this.#reloader.watch()
        else this.#reloader.close()
        for (const s of this.slots) if (s.worker?.isConnected() === true) s.worker.send({ sg: 'apply', config: next } satisfies ToWorker)
      },
      env,
      log,
      count: this.#metrics?.configReload
    })
    this.#shutdown = new Shutdown({
      server: () => this.#inForce.server,
      marginS: STOP_MARGIN_S,
      // each worker drains as one process does; a second signal ends it at once
      again: (signal) => { for (const s of this.slots) s.worker?.process.kill(signal) },
      overdue: () => {
        for (const s of this.slots) s.worker?.process.kill('SIGKILL')
        abandonStdout()
        io.err(`sidegate: workers still running after server.drain_delay + server.shutdown_grace + ${STOP_MARGIN_S} s; killed\n`)
        this.#cleanup()
        process.exit(1)
      },
      run: async (signal) => await this.#stop(signal === 'fatal' ? 'SIGTERM' : signal, signal === 'fatal')
    })
  }

  async run (): Promise<number> {
    const config = this.#inForce
    this.#shutdown.trap()
    process.on('SIGHUP', () => { if (!this.#shutdown.stopping) this.#reloader.reload('SIGHUP') })
    if (config.reload.watch) this.#reloader.watch()
    // Both bound before any worker starts: a port taken on this host stops the start before
    // anything is said to listen (the public port is the workers' to bind: one that cannot ends it too).
    let binding: Listener = 'metrics'
    try {
      if (this.#metrics !== null) {
        const scrape = { scrape: (req: http.IncomingMessage, res: http.ServerResponse) => this.#scrape(req, res) }
        this.#metricsListener = await listenAdmin(
          { port: config.metrics.port, host: config.metrics.host },
          { metrics: guardScrape(scrape, this.scrapeAuth), api: null }
        )
      }
      binding = 'admin'
      const relay = adminRelay(this.slots, () => this.#shutdown.stopping)
      if (config.admin.enabled) {
        this.#adminListener = await listenAdmin(
          { port: config.admin.port, host: config.admin.host }, { metrics: null, api: relay }
        )
      }
    } catch (err) {
      this.io.err(listenFailure(config, binding, err as Error))
      await this.#metricsListener?.close()
      this.#reloader.close()
      this.#cleanup()
      return 1
    }
    if (this.#shutdown.stopping) {
      // a signal while binding: the stop is done already, with no worker to wait for
      await this.#closeListeners()
      return await this.#shutdown.done
    }
    const up = new Promise<boolean>((resolve) => { this.#up = resolve })
    this.log.info({ workers: this.count, listen: `${config.listen.host}:${config.listen.port}` }, 'starting workers')
    for (const s of this.slots) this.#fork(s)
    if (!(await up)) return await this.#shutdown.done
    if (this.#metricsListener !== null) {
      const addr = this.#metricsListener.address
      this.log.info({ address: `${addr.address}:${addr.port}`, path: '/metrics' }, 'metrics listening (summed over the workers)')
    }
    if (this.#adminListener !== null) announceAdmin(this.log, config, this.#adminListener.address, 'admin API listening (relayed to the workers)')
    this.log.info({ workers: this.count, address: `${config.listen.host}:${config.listen.port}`, upstream: config.upstream.url ?? '(built-in demo API)', abbrev: config.names.abbrev }, 'sidegate listening')
    return await this.#shutdown.done
  }

  #fork (slot: Slot): void {
    slot.restartTimer = null
    slot.listening = false
    slot.since = Date.now()
    const w = cluster.fork()
    slot.worker = w
    w.on('message', (m: ToPrimary) => {
      if (typeof m !== 'object' || m === null || !('sg' in m)) return
      if (m.sg === 'hello') {
        w.send({ sg: 'start', slot: slot.n, config: this.#inForce, adminSocket: slot.adminSocket } satisfies ToWorker)
      } else if (m.sg === 'listening') {
        slot.listening = true
        this.log.info({ worker_id: slot.n, pid: w.process.pid }, 'worker listening')
        if (!this.#allUp && this.slots.every((s) => s.listening)) { this.#allUp = true; this.#up(true) }
      } else if (m.sg === 'metrics') {
        this.#pending.get(m.id)?.(m.data)
      }
    })
    w.on('exit', (code, signal) => { this.#exited(slot, w, code, signal) })
    // a message to a worker that has just died (its channel closed): its exit is handled above
    w.on('error', (err: Error) => { this.log.debug({ worker_id: slot.n, err: err.message }, 'worker channel error') })
  }

  #exited (slot: Slot, w: Worker, code: number | null, signal: string | null): void {
    if (slot.worker === w) { slot.worker = null; slot.listening = false }
    const status = code ?? 1
    if (this.#shutdown.stopping) {
      this.#exitCodes.push(signal !== null ? 1 : status)
      if (this.slots.every((s) => s.worker === null)) this.#allExited()
      return
    }
    if (!this.#allUp || code === 2) {
      // a worker that cannot start (its port, the key, the store's database) will not start by trying again
      this.log.error({ worker_id: slot.n, pid: w.process.pid, code, signal }, this.#allUp ? 'a worker stopped on a problem a restart cannot cure (exit code 2); stopping every worker' : 'a worker ended before every worker was listening; stopping every worker')
      this.#exitCodes.push(signal !== null ? 1 : status === 0 ? 1 : status)
      this.#shutdown.stop('fatal', 1)
      return
    }
    slot.deaths = Date.now() - slot.since >= STABLE_MS ? 1 : slot.deaths + 1
    const wait = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** (slot.deaths - 1))
    this.log.warn({ worker_id: slot.n, pid: w.process.pid, code, signal, restart_in_ms: wait }, 'worker died; restarting it')
    this.#restarts?.inc()
    slot.restartTimer = setTimeout(() => this.#fork(slot), wait)
  }

  /** The stop (./shutdown.ts runs it once): the signal to every worker, then wait for all to exit. */
  async #stop (signal: NodeJS.Signals, fatal: boolean): Promise<number> {
    // stopped before every worker listened: the start ends here too
    this.#up(false)
    this.#reloader.close()
    const exited = new Promise<void>((resolve) => { this.#allExited = resolve })
    for (const s of this.slots) {
      if (s.restartTimer !== null) { clearTimeout(s.restartTimer); s.restartTimer = null }
      s.worker?.process.kill(signal)
    }
    if (!fatal) this.log.info({ signal, workers: this.slots.filter((s) => s.worker !== null).length }, 'stopping: signal passed to every worker')
    if (this.slots.some((s) => s.worker !== null)) await exited
    const code = this.#exitCodes.find((c) => c !== 0) ?? 0
    await this.#closeListeners()
    this.#cleanup()
    this.log.info({ code }, 'stopped: every worker has exited')
    await flushStdout(1000)
    return code
  }

  async #closeListeners (): Promise<void> {
    await this.#adminListener?.close()
    await this.#metricsListener?.close()
  }

  #cleanup (): void {
    if (this.#socketDir !== null) rmSync(this.#socketDir, { recursive: true, force: true })
  }

  /** /metrics: the primary's own figures and every listening worker's, summed. */
  #scrape (req: http.IncomingMessage, res: http.ServerResponse): void {
    this.#sum().then((registry) => registry.metrics().then((text) => {
      res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' })
      res.end(req.method === 'HEAD' ? undefined : text)
    }), () => { res.writeHead(500).end() })
  }

  async #sum (): Promise<ReturnType<typeof AggregatorRegistry.aggregate>> {
    const own = await this.#metrics!.registry.getMetricsAsJSON()
    const asked = this.slots.flatMap(
      (s) => s.worker !== null && s.listening && s.worker.isConnected() ? [s.worker] : []
    ).map(async (w) => {
      const id = this.#nextId++
      return await new Promise<MetricsJson | null>((resolve) => {
        const timer = setTimeout(() => { this.#pending.delete(id); resolve(null) }, METRICS_WAIT_MS)
        this.#pending.set(id, (data) => { clearTimeout(timer); this.#pending.delete(id); resolve(data) })
        w.send({ sg: 'metrics', id } satisfies ToWorker)
      })
    })
    const theirs = (await Promise.all(asked)).filter((d): d is MetricsJson => d !== null)
    return AggregatorRegistry.aggregate([own, ...theirs])
  }
}
