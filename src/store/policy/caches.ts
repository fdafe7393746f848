/**
 * The in-process caches of the records read on every request, for a backend
 * whose replicas must be told of changes (Storage.invalidation: Redis
 * pub/sub). Owned by the policy, so what is cached is what Store returns: a
 * user's public record, an access key with its secret already opened, a
 * private token's user, a session. A change evicts here at once and on every
 * other replica through a message (ports.ts Invalidation names them).
 */
import { LruCache } from '../cache.js'
import type { Invalidation, StoredSession } from '../ports.js'
import type { AccessKey, StoreCaches, User } from '../types.js'

export interface CacheOptions {
  max: number
  /** seconds */
  ttl: number
}

/**
 * Sessions are cached in process for at most this long (or auth.cache.ttl if
 * shorter): logout and disabling a user evict them everywhere at once through
 * pub/sub, so this only bounds how long a lost invalidation message matters.
 */
const SESSION_CACHE_MAX_MS = 5_000

export class Caches implements StoreCaches {
  readonly users: LruCache<User>
  readonly accessKeys: LruCache<{ key: AccessKey, secret: string }>
  /** private token lookup hash → user id */
  readonly privateTokens: LruCache<string>
  /** session records by hash(session id) */
  readonly sessions: LruCache<StoredSession>

  constructor (o: CacheOptions, private readonly link: Invalidation) {
    const ttl = o.ttl * 1000
    this.users = new LruCache(o.max, ttl)
    this.accessKeys = new LruCache(o.max, ttl)
    this.privateTokens = new LruCache(o.max, ttl)
    this.sessions = new LruCache(o.max, Math.min(ttl, SESSION_CACHE_MAX_MS))
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
    }
  }
}
