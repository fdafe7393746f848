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
import http from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { AggregatorRegistry, Counter, Gauge, type MetricObjectWithValues, type MetricValue } from 'prom-client'
import type { Config } from '../config/index.js'
import { validate } from '../config/validate.js'
import { nodeAt } from '../config/schema.js'
import { E, UsageError } from '../errors.js'
import { abandonStdout, createLogger, flushStdout, setLevel, type Logger } from '../observability/log.js'
import { guardScrape, Metrics, scrapeCredentials } from '../observability/metrics.js'
import { Reloader } from './reload.js'
import { keyForStart } from './open-store.js'
import { announceAdmin, listenAdmin, listenFailure, RELAY_PEER_HEADER, type AdminListener, type Listener } from '../admin/listener.js'
import { sendError } from '../respond.js'

type MetricsJson = Array<MetricObjectWithValues<MetricValue<string>>>

/** Messages between the primary and a worker (`sg` tells them from cluster's own). */
type ToWorker =
  | { sg: 'start', slot: number, config: Config, adminSocket: string | null }
  | { sg: 'apply', config: Config }
  | { sg: 'metrics', id: number }
type ToPrimary =
  | { sg: 'hello' }
  | { sg: 'listening' }
  | { sg: 'metrics', id: number, data: MetricsJson | null }

/** Whether this process is a worker forked by `sidegate start --workers N`. */
export function isWorker (): boolean { return cluster.isWorker }

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

/** What `start` (src/cli/index.ts) gets in a worker: its config and slot from the primary, and how to talk back. */
export interface WorkerLink {
  /** 1 to N; a restarted worker keeps the slot of the one it replaces */
  slot: number
  config: Config
  /** where to serve the admin API for the primary to relay to (admin.enabled), else null */
  adminSocket: string | null
  /** the public listener is up */
  listening (): void
  /** a live reload the primary applied: put it in force */
  onApply (fn: (next: Config) => void): void
  /** this worker's metrics, for the primary's sum */
  onMetrics (fn: () => Promise<MetricsJson>): void
}

/** In a worker: asks the primary for its config and slot. */
export async function connectToPrimary (): Promise<WorkerLink> {
  let apply: (next: Config) => void = () => {}
  let metrics: (() => Promise<MetricsJson>) | null = null
  const send = (m: ToPrimary): void => { if (process.connected) process.send!(m) }
  const started = new Promise<Extract<ToWorker, { sg: 'start' }>>((resolve) => {
    process.on('message', (m: ToWorker) => {
      if (typeof m !== 'object' || m === null || !('sg' in m)) return
      if (m.sg === 'start') resolve(m)
      else if (m.sg === 'apply') apply(m.config)
      else if (m.sg === 'metrics') {
        const id = m.id
        ;(metrics === null ? Promise.resolve(null) : metrics().catch(() => null)).then((data) => send({ sg: 'metrics', id, data }), () => {})
      }
    })
  })
  send({ sg: 'hello' })
  const s = await started
  return {
    slot: s.slot,
    config: s.config,
    adminSocket: s.adminSocket,
    listening: () => send({ sg: 'listening' }),
    onApply (fn) { apply = fn },
    onMetrics (fn) { metrics = fn }
  }
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

interface Slot {
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

export interface PrimaryIo { err: (s: string) => void }

/**
 * The primary of `sidegate start --workers N` (N > 1). Resolves with the exit
 * code once every worker has exited.
 */
export async function runPrimary (config: Config, count: number, io: PrimaryIo, env: NodeJS.ProcessEnv): Promise<number> {
  const log: Logger = createLogger(config.log.level, undefined, { worker: 0 })
  // the key before any worker: on a first start, one key (and key file) for all of them
  let scrapeAuth: string[] | null
  try {
    await keyForStart(config, log, env)
    scrapeAuth = config.metrics.enabled ? scrapeCredentials(config) : null
  } catch (err) {
    log.flush()
    if (err instanceof UsageError) { io.err(`sidegate: ${err.message}\n`); return err.exitCode }
    throw err
  }
  let inForce = config
  const metrics = config.metrics.enabled ? new Metrics({ processMetrics: false }) : null
  const restarts = metrics === null ? null : new Counter({ name: 'sidegate_worker_restarts_total', help: 'Workers (sidegate start --workers N) the primary restarted after one died.', registers: [metrics.registry] })
  const slots: Slot[] = []
  if (metrics !== null) {
    new Gauge({ name: 'sidegate_workers', help: 'Workers (sidegate start --workers N) running and listening.', registers: [metrics.registry], collect () { this.set(slots.filter((s) => s.listening).length) } })
  }
  const socketDir = config.admin.enabled ? mkdtempSync(join(tmpdir(), 'sidegate-')) : null
  for (let n = 1; n <= count; n++) {
    slots.push({ n, worker: null, since: 0, listening: false, deaths: 0, restartTimer: null, adminSocket: socketDir === null ? null : join(socketDir, `w${n}.sock`) })
  }

  let stopping = false
  let allUp = false
  const exitCodes: number[] = []
  let finish: (code: number) => void = () => {}
  const done = new Promise<number>((resolve) => { finish = resolve })
  let onAllUp: () => void = () => {}
  let abortStart: () => void = () => {}
  const up = new Promise<boolean>((resolve) => { onAllUp = () => resolve(true); abortStart = () => resolve(false) })

  // metrics requests in flight, by id
  let nextId = 1
  const pending = new Map<number, (data: MetricsJson | null) => void>()

  const fork = (slot: Slot): void => {
    slot.restartTimer = null
    slot.listening = false
    slot.since = Date.now()
    const w = cluster.fork()
    slot.worker = w
    w.on('message', (m: ToPrimary) => {
      if (typeof m !== 'object' || m === null || !('sg' in m)) return
      if (m.sg === 'hello') {
        w.send({ sg: 'start', slot: slot.n, config: inForce, adminSocket: slot.adminSocket } satisfies ToWorker)
      } else if (m.sg === 'listening') {
        slot.listening = true
        log.info({ worker_id: slot.n, pid: w.process.pid }, 'worker listening')
        if (!allUp && slots.every((s) => s.listening)) { allUp = true; onAllUp() }
      } else if (m.sg === 'metrics') {
        pending.get(m.id)?.(m.data)
      }
    })
    w.on('exit', (code, signal) => { exited(slot, w, code, signal) })
    // a message to a worker that has just died (its channel closed): its exit is handled above
    w.on('error', (err: Error) => { log.debug({ worker_id: slot.n, err: err.message }, 'worker channel error') })
  }

  const exited = (slot: Slot, w: Worker, code: number | null, signal: string | null): void => {
    if (slot.worker === w) { slot.worker = null; slot.listening = false }
    const status = code ?? 1
    if (stopping) {
      exitCodes.push(signal !== null ? 1 : status)
      if (slots.every((s) => s.worker === null)) finishStop()
      return
    }
    const lived = Date.now() - slot.since
    if (!allUp || code === 2) {
      // a worker that cannot start (its port, the key, the store's database) will not start by trying again
      log.error({ worker_id: slot.n, pid: w.process.pid, code, signal }, allUp ? 'a worker stopped on a problem a restart cannot cure (exit code 2); stopping every worker' : 'a worker ended before every worker was listening; stopping every worker')
      exitCodes.push(signal !== null ? 1 : status === 0 ? 1 : status)
      abortStart()
      stopAll('SIGTERM', true)
      return
    }
    slot.deaths = lived >= STABLE_MS ? 1 : slot.deaths + 1
    const wait = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** (slot.deaths - 1))
    log.warn({ worker_id: slot.n, pid: w.process.pid, code, signal, restart_in_ms: wait }, 'worker died; restarting it')
    restarts?.inc()
    slot.restartTimer = setTimeout(() => fork(slot), wait)
  }

  let hardStop: NodeJS.Timeout | null = null
  const stopAll = (signal: NodeJS.Signals, fatal = false): void => {
    const first = !stopping
    stopping = true
    // stopped before every worker listened: the start ends here too
    abortStart()
    reloader.close()
    for (const s of slots) {
      if (s.restartTimer !== null) { clearTimeout(s.restartTimer); s.restartTimer = null }
      // each worker drains as one process does (server.drain_delay, server.shutdown_grace); a second signal ends it at once
      s.worker?.process.kill(signal)
    }
    if (first) {
      const c = inForce.server
      const delay = signal === 'SIGINT' || fatal ? 0 : c.drain_delay
      hardStop = setTimeout(() => {
        for (const s of slots) s.worker?.process.kill('SIGKILL')
        abandonStdout()
        io.err(`sidegate: workers still running after server.drain_delay + server.shutdown_grace + ${STOP_MARGIN_S} s; killed\n`)
        cleanup()
        process.exit(1)
      }, (delay + c.shutdown_grace + STOP_MARGIN_S) * 1000)
      hardStop.unref()
      if (!fatal) log.info({ signal, workers: slots.filter((s) => s.worker !== null).length }, 'stopping: signal passed to every worker')
    }
    if (slots.every((s) => s.worker === null)) finishStop()
  }

  let adminListener: AdminListener | null = null
  let metricsListener: AdminListener | null = null
  const cleanup = (): void => {
    if (socketDir !== null) rmSync(socketDir, { recursive: true, force: true })
  }
  let finishing = false
  const finishStop = (): void => {
    if (finishing) return
    finishing = true
    const code = exitCodes.find((c) => c !== 0) ?? 0
    ;(async () => {
      await adminListener?.close()
      await metricsListener?.close()
      cleanup()
      if (hardStop !== null) clearTimeout(hardStop)
      log.info({ code }, 'stopped: every worker has exited')
      await flushStdout(1000)
      finish(code)
    })().catch(() => finish(1))
  }

  const reloader = new Reloader({
    current: () => inForce,
    apply (next) {
      inForce = next
      setLevel(log, next.log.level)
      if (next.reload.watch) reloader.watch()
      else reloader.close()
      for (const s of slots) if (s.worker?.isConnected() === true) s.worker.send({ sg: 'apply', config: next } satisfies ToWorker)
    },
    env,
    log,
    count: metrics?.configReload
  })

  process.on('SIGTERM', () => stopAll('SIGTERM'))
  process.on('SIGINT', () => stopAll('SIGINT'))
  process.on('SIGHUP', () => { if (!stopping) reloader.reload('SIGHUP') })
  if (config.reload.watch) reloader.watch()

  // the metrics and admin listeners, in the primary only
  const scrape = metrics === null
    ? null
    : {
        scrape (req: http.IncomingMessage, res: http.ServerResponse): void {
          sum().then((registry) => registry.metrics().then((text) => {
            res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' })
            res.end(req.method === 'HEAD' ? undefined : text)
          }), () => { res.writeHead(500).end() })
        }
      }
  const sum = async (): Promise<ReturnType<typeof AggregatorRegistry.aggregate>> => {
    const own = await metrics!.registry.getMetricsAsJSON()
    const asked = slots.flatMap((s) => s.worker !== null && s.listening && s.worker.isConnected() ? [s.worker] : []).map(async (w) => {
      const id = nextId++
      return await new Promise<MetricsJson | null>((resolve) => {
        const timer = setTimeout(() => { pending.delete(id); resolve(null) }, METRICS_WAIT_MS)
        pending.set(id, (data) => { clearTimeout(timer); pending.delete(id); resolve(data) })
        w.send({ sg: 'metrics', id } satisfies ToWorker)
      })
    })
    const theirs = (await Promise.all(asked)).filter((d): d is MetricsJson => d !== null)
    return AggregatorRegistry.aggregate([own, ...theirs])
  }
  let turn = 0
  const relay = !config.admin.enabled
    ? null
    : {
        handle (req: http.IncomingMessage, res: http.ServerResponse): void {
          const ready = slots.filter((s) => s.listening && s.adminSocket !== null)
          if (ready.length === 0) { sendError(res, stopping ? E.shuttingDown() : E.workerUnavailable()); return }
          const slot = ready[turn++ % ready.length]
          const headers: string[] = []
          for (let i = 0; i < req.rawHeaders.length; i += 2) {
            const name = req.rawHeaders[i].toLowerCase()
            if (name === RELAY_PEER_HEADER || name === 'connection' || name === 'keep-alive') continue
            headers.push(req.rawHeaders[i], req.rawHeaders[i + 1])
          }
          headers.push(RELAY_PEER_HEADER, req.socket.remoteAddress ?? '')
          const out = http.request({ socketPath: slot.adminSocket!, method: req.method, path: req.url, headers, agent: false }, (answer) => {
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
  // Both bound before any worker starts: a port taken on this host stops the start before
  // anything is said to listen (the public port is the workers' to bind: one that cannot ends it too).
  let binding: Listener = 'metrics'
  try {
    if (scrape !== null) metricsListener = await listenAdmin({ port: config.metrics.port, host: config.metrics.host }, { metrics: guardScrape(scrape, scrapeAuth), api: null })
    binding = 'admin'
    if (relay !== null) adminListener = await listenAdmin({ port: config.admin.port, host: config.admin.host }, { metrics: null, api: relay })
  } catch (err) {
    io.err(listenFailure(config, binding, err as Error))
    await metricsListener?.close()
    reloader.close()
    cleanup()
    return 1
  }
  if (stopping) {
    // a signal while binding: the stop is done already, with no worker to wait for
    await metricsListener?.close()
    await adminListener?.close()
    return await done
  }

  log.info({ workers: count, listen: `${config.listen.host}:${config.listen.port}` }, 'starting workers')
  for (const s of slots) fork(s)
  if (!(await up)) return await done
  if (metricsListener !== null) {
    const addr = metricsListener.address
    log.info({ address: `${addr.address}:${addr.port}`, path: '/metrics' }, 'metrics listening (summed over the workers)')
  }
  if (adminListener !== null) announceAdmin(log, config, adminListener.address, 'admin API listening (relayed to the workers)')
  log.info({ workers: count, address: `${config.listen.host}:${config.listen.port}`, upstream: config.upstream.url ?? '(built-in demo API)', abbrev: config.names.abbrev }, 'sidegate listening')
  return await done
}
