/**
 * What `sidegate …` does once its command line is read (src/cli/index.ts): start
 * the gateway, check its config, or administer the store. Loaded only for a
 * command that needs it, so that --help and --version load none of it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { ConfigError, configWarningList, configWarnings, effectiveValues, loadConfig, type Config } from '../config/index.js'
import { defaultsYaml } from '../config/defaults.js'
import { jsonSchema } from '../config/json-schema.js'
import { report, type Io } from './io.js'
import type { Values } from './args.js'
import { Keyring } from '../crypto.js'
import { E, UsageError } from '../errors.js'
import { Auditor } from '../observability/audit.js'
import { createLogger } from '../observability/log.js'
import type { SecretKey } from '../app/bootstrap.js'
import { loadStoreBackend, openStore, requireSecretKey, storeName, storeWhere } from '../app/open-store.js'
import { connectToPrimary, isWorker, runPrimary, workerCount } from '../app/primary.js'
import { start } from '../app/start.js'
import { Admin, operatorName } from './admin.js'
import { KeyCheckError } from '../store/secret/check.js'
import { exitCodeOf } from './exit-codes.js'
import type { ManagedStore, RunningStore } from '../store/types.js'

/** How long an admin command waits for Redis before it gives up. */
export const CLI_CONNECT_MS = 2000

/** Runs `cmd sub …args` (both known: src/cli/index.ts checked them); returns the exit code. */
export async function run (
  cmd: string, sub: string | undefined, rest: string[], values: Values, io: Io, env: NodeJS.ProcessEnv
): Promise<number> {
  const json = values.json === true
  if (values.workers !== undefined && cmd !== 'start') return report(io, json, new UsageError('--workers is an option of start only; see `sidegate start --help`'))
  if (cmd === 'config') return configCommand(sub!, rest, values, io, env)
  if (cmd === 'ldap' && sub === 'test') return await (await import('./ldap.js')).ldapTest(rest, values, io, env)
  if (cmd === 'oidc' && sub === 'test') return await (await import('./oidc.js')).oidcTest(rest, values, io, env)
  // a worker of `start --workers N`: the config comes from the primary, which read and checked it (src/app/primary.ts)
  if (cmd === 'start' && isWorker()) {
    const link = await connectToPrimary()
    return await start(link.config, io, env, link)
  }

  if (cmd === 'start' && values.config === undefined && env.SIDEGATE_CONFIG === undefined) writeDefaultConfig(io)
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
    // the store commands (and the Redis store they may name) load only for them
    const storeCli = cmd === 'store' ? await import('./store.js') : undefined
    if (cmd === 'store') storeCli!.checkStoreCommand(sub!, rest, config)
    const secret = requireSecretKey(config, env)
    const keyring = new Keyring(secret.key)
    const newKey = cmd === 'secret' ? await readNewKey(values, io, secret) : null
    // the one line below says it when Redis is unreachable, the output when a record is unreadable: no JSON log lines
    await loadStoreBackend(config)
    store = openStore(
      config,
      log,
      keyring,
      undefined,
      { quiet: true, connectTimeout: Math.min(config.redis.connect_timeout, CLI_CONNECT_MS) }
    )
    store.setGate(E.storeUnavailable())
    await connectWithin(store, config, io)
    if (newKey !== null) return await rotate(store, config, newKey, io, values)
    // whatever audit.stream and audit.log say: the stream is where a command's events are kept
    // (`sidegate audit tail`), so the output is only what was asked; a failed append is one line below
    const auditor = (): Auditor => new Auditor({ config: { ...config.audit, log: false, stream: true }, log: createLogger('silent', { write: () => {} }), store: store!, operator: operatorName(), onStreamError: () => { unstreamed++ } })
    if (cmd === 'store' && sub === 'import') {
      audit = auditor()
      return await storeCli!.importCommand(store, config, keyring, secret.source, rest[0], values, io, audit)
    }
    try {
      await store.verifyKey({ mode: 'cli', where: storeWhere(config), source: secret.source, db: config.redis.db })
    } catch (err) {
      if (err instanceof KeyCheckError) throw err
      throw new UsageError(`cannot reach ${storeName(config)}`, 'store_unavailable')
    }
    store.setGate(null)
    if (cmd === 'store') return await storeCli!.storeCommand(store, config, keyring, sub!, rest, values, io)
    audit = auditor()
    if (cmd === 'ldap') return await (await import('./ldap.js')).ldapSync(store, config, rest, values, io, audit)
    const admin = new Admin(store, io, values, config, audit)
    return await admin.run(cmd, sub, rest)
  } catch (err) {
    return report(io, json, err)
  } finally {
    // the stream appends of this command's audit event, before the store closes
    await audit?.settle()
    if (unstreamed > 0) io.err(`sidegate: warning: ${unstreamed === 1 ? 'the audit event' : `${unstreamed} audit events`} of this command could not be appended to the audit trail in ${storeName(config)}\n`)
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
      return exitCodeOf(err.code)
    }
    return report(io, json, err)
  }
  const file = config.file ?? '(no config file: the defaults)'
  const warnings = configWarnings(config)
  const values = effectiveValues(config)
  if (json) io.out(JSON.stringify({ ok: true, file: config.file, warnings, warning_codes: configWarningList(config).map((w) => w.code), values: Object.fromEntries(values.map((v) => [v.key, { value: v.value, source: v.source }])) }, null, 2) + '\n')
  else {
    // every key in force, and where it came from: the schema's default, compat's preset, the file or the environment
    const width = Math.max(...values.map((v) => v.key.length))
    const lines = values.map((v) => `  ${v.key.padEnd(width)}  ${JSON.stringify(v.value)}  (${v.source})`)
    io.out([`ok: ${file}`, ...warnings.map((w) => `warning: ${w}`), 'values (source: default, compat, file or env):', ...lines].join('\n') + '\n')
  }
  return 0
}

/**
 * Connects within CLI_CONNECT_MS (a Redis that accepts but never answers
 * included); on a terminal, says so if it takes a moment.
 */
async function connectWithin (store: RunningStore, config: Config, io: Io): Promise<void> {
  const target = storeName(config)
  let said = false
  const slow = io.isTTY === true ? setTimeout(() => { said = true; io.err(`sidegate: connecting to ${target} …`) }, 250) : undefined
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      store.connect(),
      new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error('timeout')), CLI_CONNECT_MS) })
    ])
  } catch (err) {
    // a store file that cannot be used says why
    if (err instanceof UsageError) throw err
    throw new UsageError(`cannot reach ${target}`, 'store_unavailable')
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
    try { key = readFileSync(file, 'utf8').trim() } catch (err) { throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'not_found') }
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
 * `sidegate start` with no config named and no ./gateway.yml: writes the default file there
 * (`sidegate config defaults`: every key, commented), which is then read and watched like any
 * other; one line on stderr says where. A directory it cannot write: the defaults, and a line.
 */
function writeDefaultConfig (io: Io): void {
  const path = resolve('gateway.yml')
  if (existsSync(path)) return
  try {
    writeFileSync(path, defaultsYaml(), { flag: 'wx', mode: 0o644 })
    io.err(`sidegate: wrote the default config to ${path} (every key with its default, commented)\n`)
  } catch (err) {
    io.err(`sidegate: no gateway.yml here and none could be written (${(err as NodeJS.ErrnoException).code ?? String(err)}): the defaults\n`)
  }
}
