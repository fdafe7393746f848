/**
 * Private tokens in Redis: `pt:<hash>` → user id (the lookup entry),
 * `user-pt:<user id>` the token sealed beside its hash (./layout.ts), and
 * `pt-imported` the set of imported tokens' hashes. That set is kept in
 * process, loaded once subscribed and again when an import or a revocation
 * publishes `pt-imported:` or the subscriber reconnects: an untagged token
 * whose hash is not in it is refused without a Redis command.
 */
import type { PrivateTokenStorage, StoredPrivateToken, StoredUser } from '../ports.js'
import { scanKeys, type RedisContext } from './context.js'
import { parseUser } from './users.js'
import { openPrivateToken, sealPrivateToken } from '../secret/records.js'

export class RedisPrivateTokens implements PrivateTokenStorage {
  #imported: Promise<Set<string>> | null = null

  constructor (private readonly c: RedisContext) {}

  async setLookup (hash: string, userId: string): Promise<void> {
    await this.c.run(() => this.c.redis.set(this.c.k('pt', hash), userId))
  }

  async lookup (hash: string): Promise<string | null> {
    return await this.c.run(() => this.c.redis.get(this.c.k('pt', hash)))
  }

  /** One script; on a cluster (the user's record in another slot) two commands, one after the other. */
  async lookupUser (hash: string): Promise<{ userId: string, user: StoredUser | null } | null> {
    const { c } = this
    if (c.cluster) {
      const userId = await this.lookup(hash)
      if (userId === null) return null
      const raw = await c.run(() => c.redis.get(c.k('user', userId)))
      return { userId, user: raw === null ? null : parseUser(raw) }
    }
    const r = await c.run(() => c.scripts.lookupUser(c.k('pt', hash), c.k('user', '')))
    if (r === null || r[0] === null) return null
    return { userId: r[0], user: r[1] === null ? null : parseUser(r[1]) }
  }

  async dropLookup (hash: string): Promise<void> { await this.c.run(() => this.c.redis.del(this.c.k('pt', hash))) }

  /** A scan of pt:*, on every cluster primary. */
  async lookupsOf (userId: string): Promise<string[]> {
    const { c } = this
    const prefix = c.k('pt', '')
    const found: string[] = []
    for (const key of await c.run(async () => await scanKeys(c.redis, `${prefix}*`))) {
      if ((await c.run(() => c.redis.get(key))) === userId) found.push(key.slice(prefix.length))
    }
    return found
  }

  /**
   * SET … GET: whoever replaces a token learns which, so concurrent
   * creates leave no token that works but cannot be read or revoked.
   */
  async swap (userId: string, t: { hash: string, sealed: string }): Promise<StoredPrivateToken | null> {
    const old = await this.c.run(() => this.c.redis.set(this.c.k('user-pt', userId), sealPrivateToken(t.hash, t.sealed), 'GET'))
    return old === null ? null : openPrivateToken(old)
  }

  async get (userId: string): Promise<StoredPrivateToken | null> {
    const stored = await this.c.run(() => this.c.redis.get(this.c.k('user-pt', userId)))
    return stored === null ? null : openPrivateToken(stored)
  }

  async take (userId: string): Promise<StoredPrivateToken | null> {
    const old = await this.c.run(() => this.c.redis.getdel(this.c.k('user-pt', userId)))
    return old === null ? null : openPrivateToken(old)
  }

  async addImported (hash: string): Promise<void> { await this.c.run(() => this.c.redis.sadd(this.c.k('pt-imported'), hash)) }
  async dropImported (hash: string): Promise<boolean> {
    return (await this.c.run(() => this.c.redis.srem(this.c.k('pt-imported'), hash))) > 0
  }

  async findImported (candidates: () => string[]): Promise<string | null> {
    const { c } = this
    if (!c.trusted) {
      // invalidations may be missed: ask Redis (one command), and load nothing
      const hashes = candidates()
      const found = await c.run(() => c.redis.smismember(c.k('pt-imported'), ...hashes))
      const i = found.indexOf(1)
      return i === -1 ? null : hashes[i]
    }
    if (this.#imported === null) {
      const loading = c.run(async () => new Set(await c.redis.smembers(c.k('pt-imported'))))
      this.#imported = loading
      loading.catch(() => { if (this.#imported === loading) this.#imported = null })
    }
    const pending = this.#imported
    const known = await c.run(async () => await pending)
    if (known.size === 0) return null
    return candidates().find((h) => known.has(h)) ?? null
  }

  /** The set may be stale (a message, a reconnect, a closed gate): read it again on next need. */
  forget (): void { this.#imported = null }

  /** (Re)reads the set now, unless it is loaded or loading; a failure leaves it to the next lookup. */
  load (): Promise<unknown> {
    if (this.#imported !== null || this.c.redis.status !== 'ready') return Promise.resolve()
    const loading = this.c.redis.smembers(this.c.k('pt-imported')).then((a) => new Set(a))
    this.#imported = loading
    return loading.catch(() => { if (this.#imported === loading) this.#imported = null })
  }
}
