/** Wiring shared by `sidegate start` and the admin CLI: config → key → store. */
import type { Config } from './config.js'
import { Keyring } from './crypto.js'
import type { Logger } from './log.js'
import { ensureSecretKey } from './bootstrap.js'
import { RedisStore } from './store/redis.js'
import { describeRedis } from './store/connect.js'

/** Optional observers of the store's connections (metrics). */
export interface StoreHooks {
  onConnectionError?: (err: Error) => void
  onCommandError?: (err: unknown) => void
}

/** A URL safe to print: the password, if any, masked. */
export function safeUrl (url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch { return '(invalid url)' }
}

/** The Redis target for logs and messages: the URL without password, or the sentinel/cluster topology. */
export function redisTarget (config: Config): string {
  return describeRedis({ url: config.redis.url, commandTimeout: 0, connectTimeout: 0, topology: config.redis })
}

/**
 * `logConnectionErrors: false` for callers that report an unreachable Redis themselves (the admin CLI);
 * `hooks` observe the store (metrics).
 */
export function openStore (config: Config, log: Logger, onReady?: () => void, o: { logConnectionErrors?: boolean, hooks?: StoreHooks } = {}): RedisStore {
  const hooks = o.hooks ?? {}
  const secret = ensureSecretKey(config, log)
  const target = redisTarget(config)
  let lastError = ''
  return new RedisStore({
    url: config.redis.url,
    topology: config.redis,
    onCommandError: hooks.onCommandError,
    prefix: config.redis.prefix,
    commandTimeout: config.redis.command_timeout,
    connectTimeout: config.redis.connect_timeout,
    cache: config.auth.cache,
    onError (err) {
      hooks.onConnectionError?.(err)
      if (o.logConnectionErrors === false) return
      // one line per distinct error, not one per reconnect attempt
      if (err.message === lastError) return
      lastError = err.message
      log.warn({ redis: target, err: err.message }, 'redis connection error')
    },
    onReady () {
      lastError = ''
      log.info({ redis: target }, 'redis ready')
      onReady?.()
    }
  }, new Keyring(secret))
}
