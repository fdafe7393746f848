/**
 * The Redis backend's Storage (ioredis): the command connection, which fails
 * fast while disconnected, the subscriber of ./invalidation.ts, the gate,
 * and one object per aggregate, each in its own file. Key layout: ./layout.ts.
 * Private tokens, bearer tokens and session ids reach it only as lookup
 * hashes, after the policy has verified their check tag: one without a valid
 * tag costs no command.
 */
import type { RedisTopology } from '../../config/index.js'
import { E, GatewayError } from '../../errors.js'
import type { Storage } from '../ports.js'
import { RedisAccessKeys } from './access-keys.js'
import { RedisAudit } from './audit.js'
import { RedisBearerTokens } from './bearer-tokens.js'
import { RedisGroups } from './groups.js'
import { RedisLinks } from './links.js'
import { createRedisClient, type RedisClient } from './connect.js'
import type { RedisContext } from './context.js'
import { PubSub } from './invalidation.js'
import { RedisLimits } from './limits.js'
import { RedisLocks } from './locks.js'
import { RedisMfa } from './mfa.js'
import { RedisPasskeys } from './passkeys.js'
import { RedisPrivateTokens } from './private-tokens.js'
import { defineScripts, type Scripts } from './scripts.js'
import { RedisSessions } from './sessions.js'
import { RedisSigningKeys } from './signing-keys.js'
import { RedisOrgs, RedisUsers } from './users.js'

export interface RedisStorageOptions {
  url: string
  prefix: string
  commandTimeout: number
  connectTimeout: number
  /** Called with every connection-level error (for logging); never with secrets. */
  onError?: (err: Error) => void
  onReady?: () => void
  /** Sentinel or cluster mode, credentials, TLS (see connect.ts); absent: standalone at `url`. */
  topology?: RedisTopology
  /** Called with every failed command (counted by metrics). */
  onCommandError?: (err: unknown) => void
}

export class RedisStorage implements Storage, RedisContext {
  readonly redis: RedisClient
  readonly scripts: Scripts
  readonly prefix: string
  readonly commandTimeout: number
  readonly cluster: boolean
  readonly invalidation: PubSub
  readonly orgs = new RedisOrgs(this)
  readonly groups = new RedisGroups(this)
  readonly links = new RedisLinks(this)
  readonly users = new RedisUsers(this)
  readonly accessKeys = new RedisAccessKeys(this)
  readonly privateTokens = new RedisPrivateTokens(this)
  readonly bearerTokens = new RedisBearerTokens(this)
  readonly sessions = new RedisSessions(this)
  readonly limits = new RedisLimits(this)
  readonly locks = new RedisLocks(this)
  readonly audit = new RedisAudit(this)
  readonly signingKeys = new RedisSigningKeys(this)
  readonly mfa = new RedisMfa(this)
  readonly passkeys = new RedisPasskeys(this)
  readonly #connectTimeout: number
  readonly #onCommandError: ((err: unknown) => void) | undefined
  /** While set, every call fails with it and nothing cached is used (the key check has not passed: keycheck.ts). */
  #gate: GatewayError | null = null

  constructor (o: RedisStorageOptions) {
    this.prefix = o.prefix
    this.commandTimeout = o.commandTimeout
    this.cluster = o.topology?.mode === 'cluster'
    this.#connectTimeout = o.connectTimeout
    this.#onCommandError = o.onCommandError
    this.redis = createRedisClient(o, 'command')
    this.redis.on('error', (err: Error) => o.onError?.(err))
    this.redis.on('ready', () => o.onReady?.())
    this.scripts = defineScripts(this.redis)
    this.invalidation = new PubSub(this, o, {
      message: (msg) => { if (msg.startsWith('pt-imported:')) { this.privateTokens.forget(); void this.privateTokens.load() } },
      reset: () => {
        this.privateTokens.forget()
        if (this.#gate === null) void this.privateTokens.load()
      }
    })
  }

  now (): number { return Date.now() }

  k (...parts: string[]): string { return this.prefix + parts.join(':') }

  async run<T> (fn: () => Promise<T>): Promise<T> {
    if (this.#gate !== null) throw this.#gate
    try {
      return await fn()
    } catch (err) {
      if (err instanceof GatewayError) throw err
      this.#onCommandError?.(err)
      throw Object.assign(E.storeUnavailable(), { cause: err })
    }
  }

  /**
   * Cached entries are trusted only while both connections are up: with the
   * command connection down a request must fail with 503 like any other, and
   * with the subscriber down invalidations may be missed.
   */
  get trusted (): boolean { return this.#gate === null && this.redis.status === 'ready' && this.invalidation.listening }

  /**
   * Connects both clients; resolves when the command connection is ready or rejects on first failure (retries go on).
   */
  async connect (): Promise<void> {
    const subscribed = this.invalidation.subscribe()
    await this.redis.connect()
    // read once subscribed, so no import in between goes unnoticed, and before the first request needs it;
    // a subscriber still not there after connect_timeout: read on first need instead
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), this.#connectTimeout) })
    const ok = await Promise.race([subscribed, late])
    clearTimeout(timer)
    if (ok) await this.privateTokens.load()
  }

  get isReady (): boolean { return this.redis.status === 'ready' }

  setGate (err: GatewayError | null): void {
    this.#gate = err
    if (err !== null) this.privateTokens.forget()
    else void this.privateTokens.load()
  }

  async ping (): Promise<void> { await this.run(() => this.redis.ping()) }

  async close (): Promise<void> {
    this.invalidation.disconnect()
    try { await this.redis.quit() } catch {}
    // after QUIT too: releases the connector's own sockets (sentinels), a no-op otherwise
    this.redis.disconnect()
  }
}
