/**
 * Sessions: the id carries a check tag and is stored only as its lookup
 * hash, with the idle timeout as its expiry (touch pushes it back); the
 * user's index of sessions lives as long as the longest-lived may (the
 * absolute timeout). The CSRF token is derived from the id, never stored.
 * Ending a session, or all of a user's, evicts it on every replica at once.
 */
import type { StoredSession } from '../ports.js'
import { PASSWORD_ONLY, samePasswordOnly, type Factor } from '../factors.js'
import type { Session, SessionInfo, SsoSignIn } from '../model.js'
import { invalidate, sessionsEnded, type Context } from './context.js'

export class Sessions {
  constructor (private readonly c: Context) {}

  /**
   * `ttlSeconds`: the idle timeout; `lifetimeSeconds`: the longest the session may live (the absolute timeout);
   * `factors`: what the sign-in was made with (default the password alone); `sso`: made through a provider,
   * its source and the names (its sub, its sid) endTagged finds the session by, stored as keyed hashes.
   */
  async create (
    userId: string, ttlSeconds: number, lifetimeSeconds = ttlSeconds, factors: readonly Factor[] = PASSWORD_ONLY,
    sso?: SsoSignIn
  ): Promise<Session> {
    const id = this.c.keys.issue('session id')
    const s: StoredSession = { user_id: userId, created: this.c.storage.now() }
    if (!samePasswordOnly(factors)) s.factors = [...factors]
    if (sso !== undefined) s.sso = { source: sso.source, tags: sso.names.map((n) => this.#tag(sso.source, n)) }
    await this.c.storage.sessions.insert(this.c.keys.lookup(id), s, ttlSeconds, Math.max(ttlSeconds, lifetimeSeconds))
    return this.#session(id, s)
  }

  async get (id: string): Promise<Session | null> { return await this.lookup(id) }

  /**
   * get, but at once (no promise) when memory decides: null when the id is none (a wrong check tag), the
   * session when cached in process; else a promise of the stored one, then cached (a few seconds at most).
   */
  lookup (id: string): Session | null | Promise<Session | null> {
    if (!this.c.keys.tagged('session id', id)) return null
    const h = this.c.keys.lookup(id)
    const cache = this.c.caches
    const s = cache !== null && cache.trusted ? cache.sessions.get(h) : undefined
    return s === undefined ? this.#fill(id, h) : this.#session(id, s)
  }

  async #fill (id: string, h: string): Promise<Session | null> {
    const cache = this.c.caches
    const stamp = cache?.sessions.stamp
    const stored = await this.c.storage.sessions.get(h)
    if (stored === null) return null
    const s: StoredSession = { user_id: stored.user_id, created: stored.created, factors: stored.factors }
    if (stored.sso !== undefined) s.sso = stored.sso
    cache?.sessions.set(h, s, stamp)
    return this.#session(id, s)
  }

  /** The CSRF token is derived on first use only: safe methods never need it. */
  #session (id: string, s: StoredSession): Session {
    const keys = this.c.keys
    let csrf: string | undefined
    const session: Session = {
      id,
      user_id: s.user_id,
      created: s.created,
      factors: s.factors ?? PASSWORD_ONLY,
      get csrf () { return (csrf ??= keys.lookup(`csrf:${id}`)) }
    }
    if (s.sso !== undefined) session.sso = s.sso.source
    return session
  }

  /** A provider's name for sessions (`sub:…`, `sid:…`) as stored: a keyed hash, useless without the key. */
  #tag (source: string, name: string): string { return this.c.keys.lookup(`sso\0${source}\0${name}`) }

  async touch (id: string, ttlSeconds: number): Promise<void> {
    if (!this.c.keys.tagged('session id', id)) return
    await this.c.storage.sessions.touch(this.c.keys.lookup(id), ttlSeconds)
  }

  /** The user id of the session it ended, null when there was none (the audit's session.revoked). */
  async delete (id: string): Promise<string | null> {
    // no record can exist for an id without a valid tag
    if (!this.c.keys.tagged('session id', id)) return null
    const h = this.c.keys.lookup(id)
    const userId = await this.c.storage.sessions.delete(h)
    // every replica drops its cached copy (logout ends the session everywhere at once)
    await invalidate(this.c, `sess:${h}`)
    return userId
  }

  /** The user's live sessions, oldest first (administration: `sidegate session list`, the admin API). */
  async list (userId: string): Promise<SessionInfo[]> {
    return (await this.c.storage.sessions.list(userId)).sort(
      (a, b) => a.created - b.created || a.id.localeCompare(b.id)
    )
  }

  /** Ends one of the user's sessions by its SessionInfo id, on every replica at once; false: no such live session. */
  async end (userId: string, id: string): Promise<boolean> {
    if (!(await this.c.storage.sessions.deleteOf(userId, id))) return false
    await invalidate(this.c, `sess:${id}`)
    return true
  }

  /**
   * Ends every session made through `source` under `name` (`sub:…` or `sid:…`, as create was given), on every
   * replica at once: a provider's back-channel logout. The users whose sessions ended, one entry per session.
   */
  async endTagged (source: string, name: string): Promise<string[]> {
    const gone = await this.c.storage.sessions.endTagged(this.#tag(source, name))
    for (const g of gone) await invalidate(this.c, `sess:${g.hash}`)
    return gone.map((g) => g.user_id)
  }

  /** Ends every session of the user, on every replica at once; how many were live. */
  async endAll (userId: string): Promise<number> {
    const n = (await this.list(userId)).length
    await this.c.storage.sessions.endAll(userId)
    await sessionsEnded(this.c, userId)
    await invalidate(this.c, `user-sess:${userId}`)
    return n
  }
}
