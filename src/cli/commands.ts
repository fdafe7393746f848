/**
 * What `sidegate …` does once its command line is read (src/cli/index.ts): start
 * the gateway, check its config, or administer the store. Loaded only for a
 * command that needs it, so that --help and --version load none of it.
 */
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { userInfo } from 'node:os'
import { ConfigError, configWarningList, configWarnings, loadConfig, type Config } from '../config/index.js'
import { defaultsYaml } from '../config/defaults.js'
import { changedKeys } from '../config/live.js'
import { jsonSchema } from '../config/json-schema.js'
import { escapeControls } from '../text.js'
import { report as reportError, VERSION, type Io } from './io.js'
import type { Values } from './args.js'
import { Keyring } from '../crypto.js'
import { E, GatewayError, UsageError } from '../errors.js'
import { Auditor, formatAuditEntry, parseSince } from '../observability/audit.js'
import { abandonStdout, createLogger, flushStdout, setLevel, type Logger } from '../observability/log.js'
import { Reloader } from '../app/reload.js'
import { maskUrl } from '../http/mask.js'
import { ensureDefaults, type SecretKey } from '../app/bootstrap.js'
import { keyStates, rotateKeySet, type KeyState } from '../forward/identity.js'
import { formatPolicy } from '../auth/rate-limit-policy.js'
import { keyForStart, openStore, redisTarget, requireSecretKey, storeWhere } from '../app/open-store.js'
import { createGateway } from '../pipeline/server.js'
import { createAdminApi } from '../admin/api.js'
import { announceAdmin, listenAdmin, listenFailure, type AdminListener, type Listener } from '../admin/listener.js'
import { connectToPrimary, isWorker, runPrimary, workerCount, type WorkerLink } from '../app/primary.js'
import { guardScrape, Metrics, scrapeCredentials } from '../observability/metrics.js'
import { KeyCheckError } from '../store/redis/keycheck.js'
import type { ManagedStore, RunningStore, Store } from '../store/types.js'
import { AdminOps, checkPassword, CLI_LABELS, parseMembership } from '../admin/ops.js'
import { ImportProblems, parseImport, PRIVILEGE_FLAGS, PrivilegedRefused, RECORD_TYPES, runImport, type Action, type PrivilegeKind, type Summary } from '../admin/import.js'

/** `sidegate import` lists at most this many bad lines. */
const SHOW_PROBLEMS = 100

/** How long an admin command waits for Redis before it gives up. */
export const CLI_CONNECT_MS = 2000

/** An error as one line (or `{detail, code}` with --json) on stderr; a wrong key is a usage error (exit 2). */
function report (io: Io, json: boolean, err: unknown): number {
  return reportError(io, json, err instanceof KeyCheckError ? new UsageError(err.message, 2, err.code) : err)
}

/** Runs `cmd sub …args` (both known: src/cli/index.ts checked them); returns the exit code. */
export async function run (cmd: string, sub: string | undefined, rest: string[], values: Values, io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const json = values.json === true
  if (values.workers !== undefined && cmd !== 'start') return report(io, json, new UsageError('--workers is an option of start only; see `sidegate start --help`'))
  if (cmd === 'config') return configCommand(sub!, rest, values, io, env)
  // a worker of `start --workers N`: the config comes from the primary, which read and checked it (src/app/primary.ts)
  if (cmd === 'start' && isWorker()) {
    const link = await connectToPrimary()
    return await start(link.config, io, env, link)
  }

  let config: Config
  try {
    config = loadConfig(values.config, env)
  } catch (err) {
    return report(io, json, err)
  }
  if (cmd === 'start') {
    if (sub !== undefined) return report(io, json, new UsageError('start takes no arguments'))
    let workers: number
    try {
      workers = workerCount(values.workers, config)
    } catch (err) {
      return report(io, json, err)
    }
    if (workers > 1) return await runPrimary(config, workers, io, env)
    return await start(config, io, env)
  }

  // warnings on stderr; the command's audit events go to the store's audit stream, not there
  const log = createLogger('warn', { write: (s: string) => io.err(s) })
  let store: ManagedStore | undefined
  let audit: Auditor | undefined
  let unstreamed = 0
  try {
    const secret = requireSecretKey(config, env)
    const keyring = new Keyring(secret.key)
    const newKey = cmd === 'secret' ? await readNewKey(values, io, secret) : null
    // the one line below says it when Redis is unreachable, the output when a record is unreadable: no JSON log lines
    store = openStore(config, log, keyring, undefined, { quiet: true, connectTimeout: Math.min(config.redis.connect_timeout, CLI_CONNECT_MS) })
    store.setGate(E.storeUnavailable())
    await connectWithin(store, config, io)
    if (newKey !== null) return await rotate(store, config, newKey, io, values)
    try {
      await store.verifyKey({ mode: 'cli', where: storeWhere(config), source: secret.source, db: config.redis.db })
    } catch (err) {
      if (err instanceof KeyCheckError) throw err
      throw new UsageError(`cannot reach Redis at ${redisTarget(config)}`, 1, 'store_unavailable')
    }
    store.setGate(null)
    // whatever audit.stream and audit.log say: the stream is where a command's events are kept
    // (`sidegate audit tail`), so the output is only what was asked; a failed append is one line below
    audit = new Auditor({ config: { ...config.audit, log: false, stream: true }, log: createLogger('silent', { write: () => {} }), store, operator: operatorName(), onStreamError: () => { unstreamed++ } })
    const admin = new Admin(store, io, values, config, audit)
    return await admin.run(cmd, sub, rest)
  } catch (err) {
    return report(io, json, err)
  } finally {
    // the stream appends of this command's audit event, before the store closes
    await audit?.settle()
    if (unstreamed > 0) io.err(`sidegate: warning: ${unstreamed === 1 ? 'the audit event' : `${unstreamed} audit events`} of this command could not be appended to the audit stream at ${redisTarget(config)}\n`)
    await store?.close()
  }
}

/** `sidegate config check|defaults|schema`: the configuration file, without a key or a store. */
function configCommand (sub: string, rest: string[], v: Values, io: Io, env: NodeJS.ProcessEnv): number {
  const json = v.json === true
  if (rest.length > 0) return report(io, json, new UsageError(`config ${sub} takes no arguments`))
  if (sub === 'defaults') { io.out(defaultsYaml()); return 0 }
  if (sub === 'schema') { io.out(JSON.stringify(jsonSchema(), null, 2) + '\n'); return 0 }
  let config: Config
  try {
    config = loadConfig(v.config, env)
  } catch (err) {
    if (json && err instanceof ConfigError) {
      io.err(JSON.stringify({ detail: err.message, code: err.code, problems: err.problems }) + '\n')
      return err.exitCode
    }
    return report(io, json, err)
  }
  const file = config.file ?? '(no config file: the defaults)'
  const warnings = configWarnings(config)
  if (json) io.out(JSON.stringify({ ok: true, file: config.file, warnings, warning_codes: configWarningList(config).map((w) => w.code) }, null, 2) + '\n')
  else io.out([`ok: ${file}`, ...warnings.map((w) => `warning: ${w}`)].join('\n') + '\n')
  return 0
}

/**
 * Connects within CLI_CONNECT_MS (a Redis that accepts but never answers
 * included); on a terminal, says so if it takes a moment.
 */
async function connectWithin (store: RunningStore, config: Config, io: Io): Promise<void> {
  const target = redisTarget(config)
  let said = false
  const slow = io.isTTY === true ? setTimeout(() => { said = true; io.err(`sidegate: connecting to Redis at ${target} …`) }, 250) : undefined
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      store.connect(),
      new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error('timeout')), CLI_CONNECT_MS) })
    ])
  } catch {
    throw new UsageError(`cannot reach Redis at ${target}`, 1, 'store_unavailable')
  } finally {
    clearTimeout(slow)
    clearTimeout(timer)
    if (said) (io.control ?? io.err)('\r\x1b[2K') // the terminal line is cleared: the next line says what happened
  }
}

async function readNewKey (v: Values, io: Io, current: SecretKey): Promise<string> {
  const file = v['new-key-file']
  if ((file === undefined) === (v['new-key-stdin'] !== true)) throw new UsageError('secret rotate needs the new key: --new-key-file FILE or --new-key-stdin')
  let key: string
  if (file !== undefined) {
    try { key = readFileSync(file, 'utf8').trim() } catch (err) { throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 1, 'not_found') }
  } else {
    key = (await io.stdin()).trim()
  }
  if (key.length < 32) throw new UsageError('the new secret key must have at least 32 characters (e.g. `openssl rand -base64 48`)')
  if (key === current.key) throw new UsageError(`the new secret key is the current one (${current.source})`)
  return key
}

async function rotate (store: ManagedStore, config: Config, newKey: string, io: Io, v: Values): Promise<number> {
  const limit = v.limit === undefined ? null : Number(v.limit)
  if (limit !== null && (!Number.isInteger(limit) || limit < 1)) throw new UsageError(`--limit must be a whole number of at least 1, got "${v.limit}"`)
  const json = v.json === true
  const dryRun = v['dry-run'] === true
  const r = await store.rotateKey(new Keyring(newKey), {
    dryRun,
    limit,
    db: config.redis.db,
    where: storeWhere(config),
    progress: (line) => { if (!json) io.err(`sidegate: ${line}\n`) }
  })
  if (json) { io.out(JSON.stringify(r, null, 2) + '\n'); return 0 }
  const lines: string[] = []
  for (const rec of r.unreadable) lines.push(`unreadable under both keys, left as it is: ${rec}`)
  if (dryRun) lines.push(`dry run: ${r.converted} records to re-encrypt, ${r.already} already under the new key; nothing written`)
  else if (!r.done) lines.push(`stopped after ${r.converted} records (--limit); run the same command again to continue`)
  else {
    lines.push(`done: ${r.converted} records re-encrypted under the new key; the store's key check value is now the new key's`)
    lines.push('next: give every replica the new key (SIDEGATE_SECRET_KEY or the key file) and restart it; processes with the old key are refused from now on')
  }
  io.out(lines.join('\n') + '\n')
  return 0
}

/**
 * `sidegate start`: one process, or (`worker`) one of the workers of
 * `start --workers N`, which takes its config and live reloads from the
 * primary, serves /metrics to it over IPC and the admin API on a private
 * socket, and does not watch the config file (src/app/primary.ts).
 */
async function start (config: Config, io: Io, env: NodeJS.ProcessEnv, worker?: WorkerLink): Promise<number> {
  const log: Logger = createLogger(config.log.level, undefined, worker === undefined ? {} : { worker: worker.slot })
  const metrics = config.metrics.enabled ? new Metrics() : null
  // the primary serves /metrics with --workers
  const scrapeAuth = metrics === null || worker !== undefined ? null : scrapeCredentials(config)
  let secret: SecretKey
  try {
    secret = await keyForStart(config, log, env)
  } catch (err) {
    log.flush()
    return report(io, false, err)
  }
  const keyring = new Keyring(secret.key)
  const verify = { mode: 'start' as const, where: storeWhere(config), source: secret.source, db: config.redis.db }
  let store: ManagedStore
  let fatal: ((err: KeyCheckError) => void) | null = null
  // Ready (/readyz) only once the key check passed and the Default org and the first
  // superuser exist. Redone on every (re)connect, since Redis may come back empty (or
  // another store); a failed attempt is retried, a failed key check is not.
  let prepared: Promise<void> | null = null
  const prepare = async (): Promise<void> => {
    prepared ??= (async () => {
      const { notes } = await store.verifyKey(verify)
      for (const n of notes) log[n.level]({ redis: verify.where }, n.msg)
      store.setGate(null)
      await ensureDefaults(store, config, log, io.err, audit)
    })().catch((err: unknown) => {
      if (!(err instanceof KeyCheckError)) prepared = null
      throw err
    })
    await prepared
  }
  try {
    store = openStore(config, log, keyring, () => {
      // until the key check passes again, nothing is read or written
      store.setGate(E.storeUnavailable())
      prepared = null
      prepare().catch((err: unknown) => {
        if (err instanceof KeyCheckError) {
          log.error({ redis: verify.where, problem: err.code }, `${err.message}; not serving: /readyz answers 503`)
          if (err.code === 'redis_db_unavailable') fatal?.(err)
        } else {
          log.error({ err: (err as Error).message }, 'bootstrap failed; will retry')
        }
      })
    }, { hooks: metrics?.storeHooks() })
  } catch (err) {
    return report(io, false, err)
  }
  store.setGate(E.storeUnavailable())
  // before the connection: the first start's bootstrap (prepare, on ready) records the superuser it creates
  const audit = new Auditor({ config: config.audit, log, store, onStreamError: metrics?.auditStreamError })
  store.connect().catch((err: Error) => log.error({ redis: redisTarget(config), err: err.message }, 'redis unreachable at start; retrying, /readyz fails until it answers'))
  // tracing on: the OpenTelemetry SDK is loaded now, and only now (src/observability/otel.ts)
  const tracer = config.tracing.url === null ? null : (await import('../observability/otel.js')).createTracer(config.tracing, log, { version: VERSION, upstream: config.upstream.url })
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
      if (api !== null && worker.adminSocket !== null) adminListener = await listenAdmin({ path: worker.adminSocket }, { metrics: null, api, relayed: true })
    } else {
      binding = 'metrics'
      if (metrics !== null) metricsListener = await listenAdmin({ port: config.metrics.port, host: config.metrics.host }, { metrics: guardScrape(metrics, scrapeAuth), api: null })
      binding = 'admin'
      if (api !== null) adminListener = await listenAdmin({ port: config.admin.port, host: config.admin.host }, { metrics: null, api })
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
  return await new Promise<number>((resolve) => {
    let stoppingSince = 0
    const stop = (signal: string, code = 0): void => {
      if (stoppingSince !== 0) {
        // `npm start` forwards the terminal's Ctrl-C, which node also got itself: one
        // signal twice within a moment is one request; a later one means "now"
        if (Date.now() - stoppingSince < DUPLICATE_SIGNAL_MS || signal === 'fatal') return
        abandonStdout()
        process.stderr.write(`sidegate: ${signal} again: exiting without waiting for the shutdown\n`)
        process.exit(signal === 'SIGINT' ? 130 : 143)
      }
      stoppingSince = Date.now()
      reloader.close()
      // the config in force: the start's, or the last one a live reload applied
      const config = gw.config
      // 1. readiness false, still serving; 2. stop accepting, finish in-flight within the grace; 3. exit 0.
      // Ctrl-C (SIGINT) is a person at a terminal, not a load balancer: no drain delay.
      const delay = signal === 'SIGINT' || code !== 0 ? 0 : config.server.drain_delay
      // Whatever happens below (a hung store, a blocked log pipe), the process ends after the
      // drain delay and the grace, plus a margin: output is abandoned, then exit.
      setTimeout(() => {
        abandonStdout()
        process.stderr.write(`sidegate: shutdown took longer than server.drain_delay + server.shutdown_grace + ${EXIT_MARGIN_S} s; exiting\n`)
        process.exit(code === 0 ? 1 : code)
      }, (delay + config.server.shutdown_grace + EXIT_MARGIN_S) * 1000).unref()
      log.info({ signal, drain_delay: delay, grace: config.server.shutdown_grace }, 'draining: readiness is now false')
      gw.drain(delay).then(() => {
        log.info('closing the listener')
        return gw.shutdown()
      }).then(async () => {
        await adminListener?.close()
        await metricsListener?.close()
        // the spans still queued go to the collector (bounded by the exporter's timeout)
        await tracer?.shutdown()
        await store.close()
        log.info('stopped')
        // the last lines, if anyone still reads them: bounded, never a reason to stay alive
        await flushStdout(STDOUT_FLUSH_MS)
        resolve(code)
      }, () => resolve(1))
    }
    fatal = (err) => {
      io.err(`sidegate: ${err.message}\n`)
      stop('fatal', 2)
    }
    process.on('SIGTERM', () => stop('SIGTERM'))
    process.on('SIGINT', () => stop('SIGINT'))
  })
}

/** Seconds past drain delay + grace after which a stopping process exits regardless. */
const EXIT_MARGIN_S = 5
/** A second SIGINT/SIGTERM within this many ms is the same request (npm forwards what node also got). */
const DUPLICATE_SIGNAL_MS = 1000
/** How long a stopping gateway waits for stdout to take its last log lines. */
const STDOUT_FLUSH_MS = 1000

/** Who runs a command, for the audit's actorName: the login name, else the uid (a container's user may have no name). */
function operatorName (): string {
  try { return userInfo().username } catch { return `uid ${process.getuid?.() ?? '?'}` }
}

class Admin {
  readonly #ops: AdminOps
  constructor (private readonly store: Store, private readonly io: Io, private readonly v: Values, private readonly config: Config, private readonly audit: Auditor) {
    this.#ops = new AdminOps(store, config, CLI_LABELS, (r) => { audit.record(r) })
  }

  #print (json: unknown, text: string): number {
    this.io.out(this.v.json === true ? JSON.stringify(json, null, 2) + '\n' : text + '\n')
    return 0
  }

  #one (args: string[], what: string): string {
    if (args.length !== 1) throw new UsageError(`expected exactly one ${what}`)
    return args[0]
  }

  async #password (): Promise<string> {
    if (this.v['password-stdin'] !== true) throw new UsageError('the password must come from standard input: add --password-stdin')
    return checkPassword((await this.io.stdin()).replace(/\r?\n$/, ''))
  }

  /** `--org ID[:role]`, each: the org id and the role as given (AdminOps checks both). */
  #orgs (): Array<{ id: string, role: string }> {
    return (this.v.org ?? []).map((o) => { const [id, role = 'user'] = o.split(':'); return { id, role } })
  }

  /** `sidegate import --from FILE [--format jsonl|csv] [--dry-run] [--allow-superuser] [--allow-takeover]` */
  async #import (args: string[]): Promise<number> {
    if (args.length > 0) throw new UsageError('import takes no arguments but its options: --from FILE')
    const file = this.v.from
    if (file === undefined || file === '') throw new UsageError('import needs --from FILE')
    const format = this.v.format ?? (file.toLowerCase().endsWith('.csv') ? 'csv' : 'jsonl')
    if (format !== 'jsonl' && format !== 'csv') throw new UsageError(`--format must be jsonl or csv, got "${format}"`)
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 1, 'not_found')
    }
    const dryRun = this.v['dry-run'] === true
    const allow = new Set<PrivilegeKind>()
    if (this.v['allow-superuser'] === true) allow.add('superuser')
    if (this.v['allow-takeover'] === true) allow.add('takeover')
    let summary: Summary
    try {
      summary = await runImport(this.store, parseImport(text, format), dryRun, { allow, audit: (r) => { this.audit.record(r) } })
    } catch (err) {
      if (err instanceof PrivilegedRefused) {
        const flags = [...new Set(err.refused.map((p) => PRIVILEGE_FLAGS[p.kind]))].join(' ')
        throw new UsageError(`${file}: ${err.refused.length} privileged change${err.refused.length === 1 ? '' : 's'} not allowed, nothing was imported:\n${err.message.split('\n').map((l) => `  ${l}`).join('\n')}\nCheck them (--dry-run lists them), then run again with ${flags}`, 1, 'invalid_import')
      }
      if (!(err instanceof ImportProblems)) throw err
      const n = err.problems.length
      const shown = err.message.split('\n').slice(0, SHOW_PROBLEMS).map((l) => `  ${l}`)
      if (n > SHOW_PROBLEMS) shown.push(`  … and ${n - SHOW_PROBLEMS} more`)
      throw new UsageError(`${file}: ${n} problem${n === 1 ? '' : 's'}, nothing was imported:\n${shown.join('\n')}`, 1, 'invalid_import')
    }
    const { counts, notes, privileged } = summary
    const total = (a: Action): number => RECORD_TYPES.reduce((sum, t) => sum + counts[t][a], 0)
    const head = dryRun ? `dry run of ${file}: nothing was written; it would be:` : `imported ${file}:`
    const rows = RECORD_TYPES.map((t) => `  ${t.padEnd(14)} ${String(counts[t].created).padStart(5)} created  ${String(counts[t].updated).padStart(5)} updated  ${String(counts[t].unchanged).padStart(5)} unchanged`)
    const tail = notes.map((n) => `note: line ${n.line}: ${escapeControls(n.message)}`)
    // what a file's author gains over accounts: always spelled out, allowed or not
    const needs = privileged.map((p) => `privileged: line ${p.line}: ${escapeControls(p.message)} (${PRIVILEGE_FLAGS[p.kind]}${allow.has(p.kind) ? ', allowed' : dryRun ? ' needed' : ''})`)
    return this.#print({ file, format, dry_run: dryRun, counts, created: total('created'), updated: total('updated'), unchanged: total('unchanged'), notes, privileged: privileged.map((p) => ({ ...p, flag: PRIVILEGE_FLAGS[p.kind], allowed: allow.has(p.kind) })) },
      [head, ...rows, ...needs, ...tail].join('\n'))
  }

  async run (cmd: string, sub: string | undefined, args: string[]): Promise<number> {
    if (cmd === 'import') return await this.#import(sub === undefined ? args : [sub, ...args])
    const key = `${cmd} ${sub ?? ''}`.trim()
    const ops = this.#ops
    switch (key) {
      case 'user add': {
        const username = this.#one(args, 'username')
        const u = await ops.createUser({ username, password: await this.#password(), email: this.v.email, name: this.v.name, superuser: this.v.superuser === true, orgs: this.#orgs() })
        return this.#print(u, `created user ${u.username} (${u.id})`)
      }
      case 'user list': {
        const org = this.v.org?.[0]
        const users = await ops.listUsers(org === undefined ? undefined : parseMembership(org).id)
        return this.#print(users, users.map((u) => `${u.id}  ${u.username}${u.is_superuser ? '  superuser' : ''}${u.is_active ? '' : '  disabled'}`).join('\n') || '(no users)')
      }
      case 'user disable':
      case 'user enable': {
        const r = await ops.setActive(this.#one(args, 'username'), sub === 'enable')
        return this.#print(r, `${sub}d user ${r.username}`)
      }
      case 'user passwd': {
        const username = this.#one(args, 'username')
        await ops.user(username)
        const r = await ops.setPassword(username, await this.#password())
        return this.#print(r, `password changed for ${r.username}`)
      }
      case 'user grant': {
        const username = this.#one(args, 'username')
        await ops.user(username)
        if ((this.v.org ?? []).length === 0) throw new UsageError('user grant needs --org ID[:admin|:none]')
        const after = await ops.grant(username, this.#orgs())
        return this.#print(after, `${after.username}: ${Object.entries(after.orgs).map(([o, r]) => `${o}:${r}`).join(', ') || '(no orgs)'}`)
      }
      case 'org add': {
        const org = await ops.createOrg(this.#one(args, 'org name'), this.v.id)
        return this.#print(org, `created org ${escapeControls(org.name)} (${org.id})`)
      }
      case 'org list': {
        const orgs = await ops.listOrgs()
        return this.#print(orgs, orgs.map((o) => `${o.id}  ${escapeControls(o.name)}`).join('\n') || '(no orgs)')
      }
      case 'key create': {
        const k = await ops.createKey(this.#one(args, 'username'), { expires: this.v.expires, allow_ips: this.v['allow-ip'], name: this.v.name })
        const extra = [k.name === undefined ? '' : `Name:            ${escapeControls(k.name)}`, k.date_expired === undefined ? '' : `Expires:         ${k.date_expired}`, k.allow_ips === undefined ? '' : `Allowed from:    ${k.allow_ips.join(', ')}`].filter(Boolean)
        return this.#print(k, [`AccessKeyID:     ${k.id}`, `AccessKeySecret: ${k.secret}`, ...extra, '(the secret is shown once)'].join('\n'))
      }
      case 'key list': {
        const keys = await ops.listKeys(this.#one(args, 'username'))
        const now = Date.now()
        return this.#print(keys, keys.map((k) => `${k.id}${k.name === undefined ? '' : `  "${escapeControls(k.name)}"`}  created ${k.date_created}  last used ${k.date_last_used ?? 'never'}${k.date_expired === undefined ? '' : `  ${Date.parse(k.date_expired) <= now ? 'EXPIRED' : 'expires'} ${k.date_expired}`}${k.allow_ips === undefined ? '' : `  from ${k.allow_ips.join(',')}`}${k.is_active ? '' : '  disabled'}${k.unreadable === true ? '  UNREADABLE (its secret was stored under another secret key; `sidegate key revoke` deletes it)' : ''}`).join('\n') || '(no keys)')
      }
      case 'key disable':
      case 'key enable': {
        const r = await ops.setKeyActive(this.#one(args, 'key id'), sub === 'enable')
        return this.#print(r, `${sub}d access key ${r.id}`)
      }
      case 'key revoke': {
        const r = await ops.revokeKey(this.#one(args, 'key id'))
        return this.#print(r, `revoked access key ${r.id}`)
      }
      case 'token create': {
        const r = await ops.createToken(this.#one(args, 'username'))
        return this.#print(r, r.token)
      }
      case 'token show': {
        const r = await ops.showToken(this.#one(args, 'username'))
        return this.#print(r, r.token)
      }
      case 'token revoke': {
        const r = await ops.revokeToken(this.#one(args, 'username'))
        return this.#print(r, `revoked the private token of ${r.username}`)
      }
      case 'session list': {
        const list = await ops.listSessions(this.#one(args, 'username'))
        return this.#print(list, list.map((x) => `${x.id}  created ${x.date_created}  ends ${x.date_expires}`).join('\n') || '(no sessions)')
      }
      case 'session revoke': {
        if (this.v.all === true) {
          const r = await ops.revokeSessions(this.#one(args, 'username'))
          return this.#print(r, `ended ${r.revoked} session${r.revoked === 1 ? '' : 's'} of ${r.username}`)
        }
        if (args.length !== 2) throw new UsageError('expected a username and a session id (see `sidegate session list`), or a username and --all')
        const r = await ops.revokeSession(args[0], args[1])
        return this.#print(r, `ended session ${r.id} of ${r.username}`)
      }
      case 'jwk rotate': {
        if (args.length > 0) throw new UsageError('jwk rotate takes no arguments')
        const c = this.config.identity.jwt
        const { key: k, removed } = await rotateKeySet(this.store, c)
        const from = new Date(k.active_from).toISOString()
        return this.#print({ kid: k.kid, alg: k.alg, published: new Date(k.created).toISOString(), signs_from: from, removed },
          [`added key ${k.kid} (${k.alg}): published now, signs from ${from}`, ...removed.map((r) => `removed retired key ${r}`),
            ...(c.enabled ? [] : ['note: identity.jwt.enabled is false in this configuration: no gateway signs with it until it is turned on'])].join('\n'))
      }
      case 'jwk list': {
        if (args.length > 0) throw new UsageError('jwk list takes no arguments')
        const set = await this.store.getSigningKeys()
        const states = keyStates(set.keys, Date.now(), this.config.identity.jwt.ttl * 1000)
        const iso = (ms: number | null): string | null => ms === null ? null : new Date(ms).toISOString()
        const WHEN: Record<KeyState, string> = { signing: 'until', next: 'signs from', replaced: 'published until', retired: '' }
        return this.#print(states.map(({ key: k, state, until }) => ({
          kid: k.kid,
          alg: k.alg,
          state,
          created: iso(k.created),
          active_from: iso(k.active_from),
          until: iso(until),
          ...(k.private === null ? { unreadable: true } : {})
        })),
        states.map(({ key: k, state, until }) => `${k.kid}  ${k.alg.padEnd(5)}  ${state.padEnd(8)}${until === null ? '' : `  ${WHEN[state]} ${iso(until)}`}${k.private === null ? '  UNREADABLE (stored under another secret key)' : ''}`).join('\n') || '(no keys: the first gateway started with identity.jwt.enabled creates one)')
      }
      case 'limit set': {
        if (args.length !== 2) throw new UsageError('expected a username or key id and a limit, e.g. `sidegate limit set alice 100/60s`')
        const { target: t, policy, json } = await ops.setLimit(args[0], args[1])
        const off = this.config.rate_limit.enabled ? '' : ' (rate_limit.enabled is false: not counted until it is on)'
        return this.#print(json, `${t.kind} ${t.name}: ${formatPolicy(policy)}${off}`)
      }
      case 'limit clear': {
        const { target: t, json } = await ops.clearLimit(this.#one(args, 'username or key id'))
        return this.#print(json, `${t.kind} ${t.name}: back to gateway.yml's rate_limit`)
      }
      case 'limit list': {
        if (args.length !== 0) throw new UsageError('limit list takes no arguments')
        const r = await ops.listLimits()
        const c = r.configured
        const head = `rate_limit ${c.enabled ? 'enabled' : 'disabled (nothing is counted)'}; default ${formatPolicy(c.default)} per user` +
          Object.entries(c.methods).map(([m, v]) => `; ${m} ${v}`).join('')
        const lines = r.overrides.map((x) => `${x.kind.padEnd(4)}  ${x.id}  ${x.username}  ${formatPolicy(x)}`)
        return this.#print(r, [head, ...(lines.length === 0 ? ['(no user or key has its own limit)'] : lines)].join('\n'))
      }
      case 'audit tail': {
        if (args.length > 0) throw new UsageError('audit tail takes no arguments')
        return await tailAudit(this.store, this.io, this.v, this.config)
      }
      default:
        throw new UsageError(`unknown command "${key}"; see \`sidegate ${cmd} --help\``)
    }
  }
}

/** A stream id after every entry of millisecond `ms - 1`: reading after it starts at `ms`. */
const justBefore = (ms: number): string => `${Math.max(0, ms - 1)}-18446744073709551615`
/** Entries read per call, and how long a follow waits in one call (less when redis.command_timeout is shorter). */
const TAIL_PAGE = 1000
const TAIL_BLOCK_MS = 1000

/**
 * `sidegate audit tail`: the last --limit entries (default 10) or every one
 * since --since, then with --follow each new one as it is appended (XREAD
 * BLOCK from the last id printed, so none is missed or printed twice), until
 * SIGINT or SIGTERM (exit 0). Redis going away while following: one line on
 * stderr, then it retries every second.
 */
async function tailAudit (store: Store, io: Io, v: Values, config: Config): Promise<number> {
  const json = v.json === true
  const since = v.since === undefined ? undefined : parseSince(v.since)
  if (since === null) throw new UsageError(`--since: "${v.since}" is neither a duration back from now (30s, 15m, 2h, 7d) nor a date or time (2026-11-25, 2026-11-25T10:00:00Z)`)
  const last = v.limit === undefined ? 10 : Number(v.limit)
  if (!Number.isInteger(last) || last < 1 || last > 100_000) throw new UsageError(`--limit must be a whole number from 1 to 100000, got "${v.limit}"`)
  if (!config.audit.stream) io.err('sidegate: note: audit.stream is false in this configuration: gateways with it append nothing to the stream (their log has every event); commands (sidegate user, key, token, …) always do\n')
  let cursor: string | undefined
  const print = (entries: Array<{ id: string, json: string }>): void => {
    for (const e of entries) io.out(formatAuditEntry(e, json) + '\n')
    cursor = entries.at(-1)?.id ?? cursor
  }
  if (since !== undefined) {
    cursor = justBefore(since)
    for (let page = TAIL_PAGE; page === TAIL_PAGE;) {
      const got = await store.readAudit({ after: cursor, count: TAIL_PAGE })
      print(got)
      page = got.length
    }
  } else {
    print(await store.readAudit({ last }))
    // nothing yet: every entry from now on is new (an empty stream: all of them)
    cursor ??= (await store.readAudit({ last: 1 }))[0]?.id ?? '0-0'
  }
  if (v.follow !== true) return 0
  let stop: () => void = () => {}
  const stopped = new Promise<null>((resolve) => { stop = () => resolve(null) })
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  let down = false
  try {
    for (;;) {
      let got: Array<{ id: string, json: string }> | null
      try {
        got = await Promise.race([store.readAudit({ after: cursor, block: TAIL_BLOCK_MS, count: TAIL_PAGE }), stopped])
        if (down) { down = false; io.err('sidegate: Redis answers again\n') }
      } catch (err) {
        if (!(err instanceof GatewayError) || err.code !== 'store_unavailable') throw err
        if (!down) { down = true; io.err(`sidegate: cannot reach Redis at ${redisTarget(config)}; retrying every second (Ctrl-C to stop)\n`) }
        got = await Promise.race([new Promise<[]>((resolve) => setTimeout(() => resolve([]), TAIL_BLOCK_MS)), stopped])
      }
      if (got === null) return 0
      print(got)
    }
  } finally {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
  }
}
