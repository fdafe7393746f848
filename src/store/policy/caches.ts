/**
 * The in-process caches of the records read on every request, for a backend
 * whose replicas must be told of changes (Storage.invalidation: Redis
 * pub/sub). Owned by the policy, so what is cached is what Store returns: a
 * user's public record, an access key with its secret already opened, a
 * private token's user, a session. A change evicts here at once and on every
 * other replica through a message (ports.ts Invalidation names them).
 */
import { Cache, CachePool } from '../cache.js'
import type { Invalidation, StoredSession } from '../ports.js'
import type { AccessKey, StoreCaches, User } from '../model.js'

export interface CacheOptions {
  /** 0: nothing is cached; any other value is no longer a bound (memory_mb is) */
  max: number
  /** seconds */
  ttl: number
  /** the estimated bytes every cache together may hold (default DEFAULT_MEMORY_MB) */
  memory_mb?: number
  /** the caches' clock (tests step it); default Date.now */
  now?: () => number
}

/**
 * auth.cache.memory_mb's default: 100,000 private tokens with their
 * users (75 MiB, ENTRY_BYTES) or access keys with theirs (104 MiB).
 */
export const DEFAULT_MEMORY_MB = 128

/**
 * Estimated bytes an entry holds besides its key, measured as the heap
 * growth per entry (bench/cache-cost.mjs; docs/performance.md): the value
 * as the policy caches it, the key→slot map entry and the slot arrays.
 */
export const ENTRY_BYTES = { user: 500, accessKey: 470, privateToken: 170, session: 220 } as const

/**
 * A hit on a hot entry within this share of auth.cache.ttl before it expires
 * reads it again in the background (refresh ahead): an entry in use never
 * expires under the requests that use it, and a lost message is still
 * bounded by the ttl.
 */
export const REFRESH_SHARE = 0.25

/**
 * Sessions are cached in process for at most this long (or auth.cache.ttl if
 * shorter): logout and disabling a user evict them everywhere at once through
 * pub/sub, so this only bounds how long a lost invalidation message matters.
 */
const SESSION_CACHE_MAX_MS = 5_000

export class Caches implements StoreCaches {
  readonly pool: CachePool
  readonly users: Cache<User>
  readonly accessKeys: Cache<{ key: AccessKey, secret: string }>
  /** private token lookup hash → user id */
  readonly privateTokens: Cache<string>
  /** session records by hash(session id); not refreshed ahead: they live SESSION_CACHE_MAX_MS at most */
  readonly sessions: Cache<StoredSession>

  constructor (o: CacheOptions, private readonly link: Invalidation) {
    const ttlMs = o.ttl * 1000
    const enabled = o.max !== 0
    const refreshMs = Math.round(ttlMs * REFRESH_SHARE)
    this.pool = new CachePool({ maxBytes: (o.memory_mb ?? DEFAULT_MEMORY_MB) * 1024 * 1024, now: o.now })
    this.users = new Cache(this.pool, { ttlMs, entryBytes: ENTRY_BYTES.user, enabled, refreshMs })
    this.accessKeys = new Cache(this.pool, { ttlMs, entryBytes: ENTRY_BYTES.accessKey, enabled, refreshMs })
    this.privateTokens = new Cache(this.pool, { ttlMs, entryBytes: ENTRY_BYTES.privateToken, enabled, refreshMs })
    this.sessions = new Cache(
      this.pool, { ttlMs: Math.min(ttlMs, SESSION_CACHE_MAX_MS), entryBytes: ENTRY_BYTES.session, enabled }
    )
    link.listen((msg) => this.evict(msg), () => this.clear())
  }

  /**
   * Cached entries are trusted only while the backend says so: with its
   * connection down a request must fail like any other, and with the
   * messages' connection down invalidations may be missed.
   */
  get trusted (): boolean { return this.link.trusted }

  clear (): void {
    this.users.clear(); this.accessKeys.clear(); this.privateTokens.clear(); this.sessions.clear()
  }

  evict (msg: string): void {
    const i = msg.indexOf(':')
    const kind = msg.slice(0, i)
    const id = msg.slice(i + 1)
    if (kind === 'user') this.users.delete(id)
    else if (kind === 'ak') this.accessKeys.delete(id)
    else if (kind === 'pt') this.privateTokens.delete(id)
    else if (kind === 'sess') this.sessions.delete(id)
    else if (kind === 'user-aks') {
      // a disabled user: drop every cached key and session of theirs
      this.users.delete(id)
      this.accessKeys.deleteWhere((v) => v.key.user_id === id)
      this.sessions.deleteWhere((v) => v.user_id === id)
    } else if (kind === 'user-sess') {
      // a changed password: the user's sessions only
      this.sessions.deleteWhere((v) => v.user_id === id)
    } else if (kind === 'group') {
      // a group created or removed: no cached user shows one that is gone (and a fill under way is voided)
      this.users.deleteWhere((u) => u.groups?.some((g) => g.id === id) === true)
    }
  }
}
