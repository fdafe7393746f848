/**
 * Wiring shared by `sidegate start` and the admin CLI: config → key → store.
 * The composition root of the store: the one place a RedisStore or a
 * SqliteStore is built (store.backend); everything else sees the interfaces
 * of ../store/types.ts.
 */
import type { Config } from '../config/index.js'
import { Keyring } from '../crypto.js'
import { UsageError } from '../errors.js'
import type { Logger } from '../observability/log.js'
import { missingKeyMessage, newSecretKey, readSecretKey, writeSecretKeyFile, type SecretKey } from './bootstrap.js'
import type * as RedisIndex from '../store/redis/index.js'
import type * as RedisConnect from '../store/redis/connect.js'
import type * as RedisKeys from '../store/redis/key-records.js'
import { describeRedis } from '../store/redis/describe.js'
import { SqliteStore } from '../store/sqlite/index.js'
import { SqliteKeyRecords } from '../store/sqlite/key-records.js'
import { SqliteStorage } from '../store/sqlite/storage.js'
import { KEY_CHECK, type KeyRecords } from '../store/secret/records.js'
import type { ManagedStore } from '../store/types.js'

/**
 * The Redis store and its client (ioredis: about 15 MB of a process's memory), loaded only when
 * store.backend is redis (loadStoreBackend), before the store is opened: a gateway on the
 * embedded store never loads them (docs/performance.md).
 */
let redis: {
  RedisStore: typeof RedisIndex.RedisStore
  createRedisClient: typeof RedisConnect.createRedisClient
  RedisKeyRecords: typeof RedisKeys.RedisKeyRecords
} | undefined

/** Loads what config.store.backend needs; await it before openStore and keyForStart. */
export async function loadStoreBackend (config: Config): Promise<void> {
  if (config.store.backend !== 'redis' || redis !== undefined) return
  const [{ RedisStore }, { createRedisClient }, { RedisKeyRecords }] = await Promise.all([
    import('../store/redis/index.js'), import('../store/redis/connect.js'), import('../store/redis/key-records.js')
  ])
  redis = { RedisStore, createRedisClient, RedisKeyRecords }
}

function redisModules (): NonNullable<typeof redis> {
  if (redis === undefined) throw new Error('the Redis store was not loaded: await loadStoreBackend(config) first')
  return redis
}

/** Optional observers of the store's connections (metrics). */
export interface StoreHooks {
  onConnectionError?: (err: Error) => void
  onCommandError?: (err: unknown) => void
}

/** The Redis target for logs and messages: the URL without password, or the sentinel/cluster topology. */
export function redisTarget (config: Config): string {
  return describeRedis({ url: config.redis.url, topology: config.redis })
}

/** Where the store is, for messages: the database file, or the Redis target and the key prefix. */
export function storeWhere (config: Config): string {
  return config.store.backend === 'sqlite' ? config.store.path : `${redisTarget(config)} (prefix ${config.redis.prefix})`
}

/** The store as a message names it: "Redis at …" or "the store file …". */
export function storeName (config: Config): string {
  return config.store.backend === 'sqlite' ? `the store file ${config.store.path}` : `Redis at ${redisTarget(config)}`
}

/** The store as every log line names it: the file's `path`, or the `redis` target and the key `prefix`. */
export function storeFields (config: Config): { store: 'sqlite', path: string } | { store: 'redis', redis: string, prefix: string } {
  return config.store.backend === 'sqlite'
    ? { store: 'sqlite', path: config.store.path }
    : { store: 'redis', redis: redisTarget(config), prefix: config.redis.prefix }
}

/** Every command but `start`: the existing key, or exit 2 saying where it was looked for. */
export function requireSecretKey (config: Config, env: Record<string, string | undefined>): SecretKey {
  const found = readSecretKey(config, env)
  if (found === null) throw new UsageError(missingKeyMessage(config), 'secret_key_missing')
  return found
}

/** Undecryptable records are reported at most once per this many ms each. */
const UNREADABLE_REPORT_MS = 60_000

/**
 * `quiet` for callers that report an unreachable Redis and unreadable records
 * themselves (the admin CLI); `hooks` observe the store (metrics);
 * `connectTimeout` overrides redis.connect_timeout.
 */
export function openStore (
  config: Config,
  log: Logger,
  keyring: Keyring,
  onReady?: () => void,
  o: { quiet?: boolean, hooks?: StoreHooks, connectTimeout?: number } = {}
): ManagedStore {
  const hooks = o.hooks ?? {}
  const target = redisTarget(config)
  let lastError = ''
  const reported = new Map<string, number>()
  const onUnreadable = (record: string): void => {
    if (o.quiet === true) return
    const now = Date.now()
    if (now - (reported.get(record) ?? 0) < UNREADABLE_REPORT_MS) return
    if (reported.size > 10_000) reported.clear()
    reported.set(record, now)
    log.warn({ record }, 'a stored record cannot be decrypted with this secret key (it was written under another key); it is treated as unusable')
  }
  if (config.store.backend === 'sqlite') {
    return new SqliteStore({
      path: config.store.path,
      busyTimeout: config.store.busy_timeout,
      cache: config.auth.cache,
      onCommandError: hooks.onCommandError,
      onReady () {
        if (o.quiet !== true) log.info(storeFields(config), 'store ready')
        onReady?.()
      },
      onUnreadable
    }, keyring)
  }
  return new (redisModules().RedisStore)({
    url: config.redis.url,
    topology: config.redis,
    onCommandError: hooks.onCommandError,
    prefix: config.redis.prefix,
    commandTimeout: config.redis.command_timeout,
    connectTimeout: o.connectTimeout ?? config.redis.connect_timeout,
    cache: config.auth.cache,
    onError (err) {
      hooks.onConnectionError?.(err)
      if (o.quiet === true) return
      // one line per distinct error, not one per reconnect attempt
      if (err.message === lastError) return
      lastError = err.message
      log.warn({ redis: target, err: err.message }, 'redis connection error')
    },
    onReady () {
      lastError = ''
      log.info(storeFields(config), 'redis ready')
      onReady?.()
    },
    onUnreadable
  }, keyring)
}

/**
 * The key for `sidegate start`: the configured one or the key file; with
 * neither, and only on an empty store (no check value, no user, no org), a
 * new key: its check value is recorded first (SET NX, so of several replicas
 * starting at once exactly one key wins), then the file is written. A store
 * that already holds data is refused: a new key could read none of it.
 */
export async function keyForStart (
  config: Config, log: Logger, env: Record<string, string | undefined>
): Promise<SecretKey> {
  const found = readSecretKey(config, env)
  if (found !== null) return found
  const target = storeWhere(config)
  if (config.store.backend === 'sqlite') {
    const storage = new SqliteStorage({ path: config.store.path, busyTimeout: config.store.busy_timeout })
    try {
      await storage.connect()
      return await claimNewKey(new SqliteKeyRecords(storage, target), config, log, env)
    } finally {
      await storage.close()
    }
  }
  await loadStoreBackend(config)
  const { createRedisClient, RedisKeyRecords } = redisModules()
  const client = createRedisClient({ url: config.redis.url, topology: config.redis, commandTimeout: config.redis.command_timeout, connectTimeout: config.redis.connect_timeout }, 'command')
  let lastError = ''
  client.on('error', (err: Error) => {
    if (err.message === lastError) return
    lastError = err.message
    log.warn({ redis: target, err: err.message }, 'redis unreachable; no secret key yet, waiting for Redis to check that the store is empty before creating one')
  })
  try {
    const ready = new Promise<void>((resolve) => client.once('ready', () => resolve()))
    client.connect().catch(() => {})
    await ready
    if (config.redis.db !== 0) await client.select(config.redis.db)
    return await claimNewKey(new RedisKeyRecords(client, config.redis.prefix, target), config, log, env)
  } finally {
    client.disconnect()
  }
}

/**
 * A new key for an empty store: its check value is recorded first (set only
 * when absent, so of several processes starting at once exactly one key
 * wins), then the file is written. A store that holds data is refused.
 */
async function claimNewKey (
  r: KeyRecords, config: Config, log: Logger, env: Record<string, string | undefined>
): Promise<SecretKey> {
  if (!(await r.isEmpty())) {
    const again = await keyFileWithin(config, env, 2000)
    if (again !== null) return again
    throw new UsageError(`${missingKeyMessage(config)}. The store at ${r.where} already holds data, which a new key could not read`, 'secret_key_missing')
  }
  const key = newSecretKey()
  const check = new Keyring(key).checkValue()
  if (!(await r.setIfAbsent(KEY_CHECK, check))) {
    // another process created the store's key just now: in the same directory its file appears
    const again = await keyFileWithin(config, env, 2000)
    if (again !== null) return again
    throw new UsageError(`${missingKeyMessage(config)}. Another process has just set up the store at ${r.where} with its own key`, 'secret_key_missing')
  }
  const written = (
    (): SecretKey | Error => { try { return writeSecretKeyFile(config, key, log) } catch (err) { return err as Error } }
  )()
  if (written instanceof Error || written.key !== key) {
    // not ours after all: give the store back, unless another key has claimed it since
    await r.deleteIfEqual(KEY_CHECK, check)
    if (written instanceof Error) throw written
    throw new UsageError(`another process wrote ${config.secret_key_file} at the same time; start again`, 'failed')
  }
  return { ...written, created: true }
}

async function keyFileWithin (
  config: Config, env: Record<string, string | undefined>, ms: number
): Promise<SecretKey | null> {
  const end = Date.now() + ms
  for (;;) {
    const k = readSecretKey(config, env)
    if (k !== null || Date.now() > end) return k
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
